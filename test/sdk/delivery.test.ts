import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/server-process.js';
import { startFlakyProxy, type FlakyProxy } from './flaky-proxy.js';
import { startSdkHarness, type SdkHarness } from './harness.js';

/*
 * Delivery of the packed SDK: a server that answers 503, loses an answer after storing, asks to
 * wait (Retry-After), or is down when the process exits.
 */

let h: SdkHarness;
let proxy: FlakyProxy;
beforeAll(async () => {
  h = await startSdkHarness();
  proxy = await startFlakyProxy(h.url);
});
afterAll(async () => {
  await proxy?.close();
  await h?.close();
});

const quiet = () => {};

async function tracesOfSession(sessionId: string) {
  const res = await h.ctx.app.inject({ method: 'GET', url: `/v1/traces?session_id=${sessionId}`, headers: h.tenant.auth });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { traces: { id: string; span_count: number }[] }).traces;
}

describe('a server that fails and recovers', () => {
  it('503 twice, then an answer lost after the batch was stored: every trace stored once, nothing dropped', async () => {
    const lt = new h.sdk.Looptrace({ baseUrl: proxy.url, apiKey: h.tenant.apiKey, flushAt: 1_000, onError: quiet });
    proxy.log.length = 0;
    proxy.fail({ status: 503, retryAfter: '0' }, { status: 503 }, 'lose-answer');
    const sessionId = `retry-${randomUUID()}`;
    const ids = [1, 2, 3, 4, 5].map((i) =>
      lt.trace(`order ${i}`, (trace) => {
        lt.span('step', { type: 'tool' }, () => i);
        return trace.id;
      }, { sessionId }),
    );
    await lt.flush();
    expect(proxy.log.map((r) => r.outcome)).toEqual(['503', '503', 'answer lost', 'forwarded']);
    expect(lt.stats()).toMatchObject({ sent: 5, spansSent: 5, duplicates: 5, retried: 15, dropped: 0, queued: 0, inFlight: 0 });
    const stored = await tracesOfSession(sessionId);
    expect(stored.map((t) => t.id).sort()).toEqual([...ids].sort());
    expect(stored.every((t) => t.span_count === 1)).toBe(true);
    await lt.shutdown();
  });

  it('the retry waits at least as long as Retry-After says', async () => {
    const lt = new h.sdk.Looptrace({ baseUrl: proxy.url, apiKey: h.tenant.apiKey, onError: quiet });
    proxy.log.length = 0;
    proxy.fail({ status: 429, retryAfter: '2' });
    const id = lt.trace('limited', (trace) => trace.id);
    await lt.flush();
    expect(proxy.log.map((r) => r.outcome)).toEqual(['429', 'forwarded']);
    expect(proxy.log[1]!.at - proxy.log[0]!.at).toBeGreaterThanOrEqual(2_000);
    expect(lt.stats()).toMatchObject({ sent: 1, retried: 1, dropped: 0 });
    expect((await h.storedTrace(id)).name).toBe('limited');
    await lt.shutdown();
  });

  it('a batch too large for the server (413) is split until it fits', async () => {
    const lt = new h.sdk.Looptrace({ baseUrl: proxy.url, apiKey: h.tenant.apiKey, flushAt: 1_000, onError: quiet });
    proxy.log.length = 0;
    proxy.fail({ status: 413 });
    const ids = [1, 2, 3].map((i) => lt.trace(`part ${i}`, (trace) => trace.id));
    await lt.flush();
    expect(proxy.log.map((r) => r.outcome)).toEqual(['413', 'forwarded', 'forwarded']);
    expect(lt.stats()).toMatchObject({ sent: 3, dropped: 0, retried: 0 });
    for (const id of ids) expect((await h.storedTrace(id)).id).toBe(id);
    await lt.shutdown();
  });

  it('a refused trace is dropped and counted, the rest of its batch stored', async () => {
    const problems: string[] = [];
    const lt = new h.sdk.Looptrace({ baseUrl: h.url, apiKey: h.tenant.apiKey, flushAt: 1_000, onError: (e) => problems.push(e.message) });
    const good = lt.trace('good', (trace) => trace.id);
    lt.trace('bad', () => 'x', { id: 'not-a-uuid' });
    await lt.flush();
    expect(lt.stats()).toMatchObject({ sent: 1, dropped: 1, droppedByReason: { rejected: 1 } });
    expect(problems.join('\n')).toMatch(/refused with 400/);
    expect((await h.storedTrace(good)).name).toBe('good');
    await lt.shutdown();
  });
});

describe('a server that is down', () => {
  it('the queue is bounded: overflow and what shutdown cannot send are dropped and counted', async () => {
    const lt = new h.sdk.Looptrace({
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      apiKey: h.tenant.apiKey,
      maxQueueSize: 2,
      flushAt: 1_000,
      shutdownTimeoutMs: 300,
      onError: quiet,
    });
    for (let i = 0; i < 5; i += 1) lt.trace(`t${i}`, () => i);
    expect(lt.stats()).toMatchObject({ queued: 2, droppedByReason: { queue_full: 3 } });
    await lt.shutdown();
    expect(lt.stats()).toMatchObject({ queued: 0, sent: 0, dropped: 5, droppedByReason: { queue_full: 3, shutdown: 2 } });
    expect(lt.trace('after shutdown', (trace) => trace.recorded)).toBe(false);
  });

  it('at process exit it flushes by itself; with the server down it waits a bounded time and counts the drops', async () => {
    const script = path.join(h.project, 'exit.mjs');
    writeFileSync(
      script,
      `import { Looptrace } from '@looptrace/sdk';
const [baseUrl, apiKey] = process.argv.slice(2);
const lt = new Looptrace({ baseUrl, apiKey, shutdownTimeoutMs: 1000, requestTimeoutMs: 500, onError: () => {} });
const ids = [1, 2, 3].map((i) => lt.trace('exit ' + i, (trace) => trace.id));
process.on('exit', () => console.log(JSON.stringify({ ids, stats: lt.stats() })));
`,
    );
    const run = async (baseUrl: string) => {
      const { stdout } = await promisify(execFile)(process.execPath, [script, baseUrl, h.tenant.apiKey], { cwd: h.project, timeout: 30_000 });
      return JSON.parse(stdout) as { ids: string[]; stats: Record<string, unknown> };
    };

    const up = await run(h.url);
    expect(up.stats).toMatchObject({ sent: 3, dropped: 0, queued: 0 });
    for (const id of up.ids) expect((await h.storedTrace(id)).id).toBe(id);

    const down = await run(`http://127.0.0.1:${await freePort()}`);
    expect(down.stats).toMatchObject({ sent: 0, queued: 0, dropped: 3, droppedByReason: { exit: 3 } });
    expect(down.stats.failedRequests).toBeGreaterThanOrEqual(1);
  });
});

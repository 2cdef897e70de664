/**
 * npm run bench:sdk -- [--calls 2000] [--warmup 200] [--spans 50000] [--spans-per-trace 10]
 *
 * What @looptrace/sdk costs the application it instruments, and how much it can deliver.
 *
 * A. Overhead of a wrapped call: the official OpenAI SDK calls a local fake vendor
 *    (test/sdk/fake-vendor.ts) through `chat.completions.create`, bare and wrapped by
 *    `lt.wrapOpenAI`, interleaved call by call so both see the same machine. Each wrapped call runs
 *    in its own `lt.trace` (a trace and an llm span per call, the usual request) and its traces go
 *    to a local sink that answers 201. The per-span overhead is p50(wrapped) - p50(bare). The same
 *    pair is also timed with an in-memory `fetch` (no socket), where the SDK's own cost is not
 *    hidden in loopback noise. Target: at most 0.2 ms per span (p50).
 * B. Delivery: one process records `--spans` spans (traces of `--spans-per-trace`) as fast as it
 *    can, holding back only when its queue is full, against the real server (src/server.ts, a
 *    fresh enterprise tenant); spans/s from the first span until the server acknowledged the last.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import { Looptrace } from '../sdk/src/index.js';
import { startFakeVendor } from '../test/sdk/fake-vendor.js';
import { BENCH_DATA, gitState, machine, writeResult } from './lib/env.js';
import { createBenchTenant, startServer } from './lib/looptrace.js';
import { percentile, summary } from './lib/stats.js';

const { values: args } = parseArgs({
  options: {
    calls: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '200' },
    spans: { type: 'string', default: '50000' },
    'spans-per-trace': { type: 'string', default: '10' },
  },
});
const CALLS = Number(args.calls);
const WARMUP = Number(args.warmup);
const SPANS = Number(args.spans);
const SPANS_PER_TRACE = Number(args['spans-per-trace']);
const DATA_DIR = path.join(BENCH_DATA, 'sdk');
const messages = [{ role: 'user' as const, content: 'What is the capital of France?' }];

/** Answers every ingest batch 201, item by item: the overhead part measures the client, not a server. */
async function startIngestSink() {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { traces } = JSON.parse(Buffer.concat(chunks).toString()) as { traces: { id: string }[] };
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ results: traces.map((t, index) => ({ index, id: t.id, status: 201 })) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(r)) };
}

/** A fetch that answers like the fake vendor without a socket. */
function inMemoryFetch(): typeof fetch {
  const body = JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Paris.', refusal: null }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: 14, completion_tokens: 2, total_tokens: 16 },
  });
  return async () => new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
}

async function overhead(lt: Looptrace, client: (wrapped: boolean) => OpenAI) {
  const bare = client(false);
  const wrapped = lt.wrapOpenAI(client(true));
  const call = async (c: OpenAI, traced: boolean) => {
    const start = process.hrtime.bigint();
    if (traced) await lt.trace('request', () => c.chat.completions.create({ model: 'gpt-4o-mini', messages }));
    else await c.chat.completions.create({ model: 'gpt-4o-mini', messages });
    return Number(process.hrtime.bigint() - start) / 1e6;
  };
  for (let i = 0; i < WARMUP; i += 1) {
    await call(bare, false);
    await call(wrapped, true);
  }
  const times = { bare: [] as number[], wrapped: [] as number[] };
  for (let i = 0; i < CALLS; i += 1) {
    // Alternating which goes first keeps a periodic disturbance from favouring one side.
    const order = i % 2 === 0 ? (['bare', 'wrapped'] as const) : (['wrapped', 'bare'] as const);
    for (const side of order) times[side].push(await call(side === 'bare' ? bare : wrapped, side === 'wrapped'));
  }
  await lt.flush();
  const p50 = { bare: percentile(times.bare, 50), wrapped: percentile(times.wrapped, 50) };
  return {
    bare: summary(times.bare),
    wrapped: summary(times.wrapped),
    overhead_p50_ms_per_span: Math.round((p50.wrapped - p50.bare) * 1000) / 1000,
    target_ms: 0.2,
  };
}

async function delivery(url: string, apiKey: string) {
  const lt = new Looptrace({ baseUrl: url, apiKey, flushAt: 100, maxBatchSize: 100, maxQueueSize: 2_000, flushOnExit: false });
  const traces = Math.ceil(SPANS / SPANS_PER_TRACE);
  const input = 'x'.repeat(300);
  const start = process.hrtime.bigint();
  let recordingNs = 0n;
  for (let t = 0; t < traces; t += 1) {
    // Hold back while the queue is nearly full: the bench measures delivery, not overflow.
    while (lt.stats().queued > 1_800) await new Promise((r) => setTimeout(r, 2));
    const before = process.hrtime.bigint();
    lt.trace('bench', () => {
      for (let s = 0; s < SPANS_PER_TRACE; s += 1) lt.span(`step ${s}`, { type: 'tool', input }, () => 'ok');
    });
    recordingNs += process.hrtime.bigint() - before;
  }
  await lt.flush();
  while (lt.stats().sent + lt.stats().dropped < traces) await lt.flush();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const stats = lt.stats();
  await lt.shutdown();
  return {
    traces,
    spans: traces * SPANS_PER_TRACE,
    seconds: Math.round(seconds * 100) / 100,
    spans_per_second: Math.round((stats.spansSent / seconds) * 10) / 10,
    recording_us_per_span: Math.round((Number(recordingNs) / 1e3 / (traces * SPANS_PER_TRACE)) * 100) / 100,
    stats,
  };
}

async function main() {
  const host = machine(); // before the bench adds its own load
  const vendor = await startFakeVendor();
  const sink = await startIngestSink();
  const sinkClient = new Looptrace({ baseUrl: sink.url, apiKey: 'lt_bench', flushOnExit: false });
  let overheadResult;
  try {
    overheadResult = {
      loopback_vendor: await overhead(sinkClient, () => new OpenAI({ apiKey: 'sk-bench', baseURL: `${vendor.url}/v1`, maxRetries: 0 })),
      in_memory_fetch: await overhead(sinkClient, () => new OpenAI({ apiKey: 'sk-bench', baseURL: 'http://vendor.invalid/v1', maxRetries: 0, fetch: inMemoryFetch() })),
      sink_stats: sinkClient.stats(),
    };
  } finally {
    await sinkClient.shutdown();
    await sink.close();
    await vendor.close();
  }

  rmSync(DATA_DIR, { recursive: true, force: true });
  mkdirSync(DATA_DIR, { recursive: true });
  const tenant = await createBenchTenant(DATA_DIR, `bench-sdk-${Date.now()}`);
  const server = await startServer(DATA_DIR);
  try {
    const result = {
      bench: 'sdk',
      date: new Date().toISOString(),
      machine: host,
      loadavg_1m_at_end: +loadavg()[0]!.toFixed(2),
      code: gitState(),
      overhead: overheadResult,
      delivery: await delivery(server.url, tenant.api_key),
      server_memory: server.memory(),
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`wrote ${writeResult('sdk', result)}`);
  } finally {
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

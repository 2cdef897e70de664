/**
 * npm run bench:trace-detail -- [--spans 10000] [--requests 100] [--warmup 10] [--variants full,tree]
 *
 * Latency of GET /v1/traces/{id} for one big trace (default 10,000 spans of bench:ingest's kind:
 * 200–800 character inputs and outputs), through the real server: a fresh tenant ingests the trace
 * through POST /v1/ingest/batch, then the bench fetches it again and again, one request at a time,
 * timing each to the last byte of the body (and to its first, the headers). Then its span tree (GET /v1/traces/{id}/tree, `tree`
 * in the results) the same way. With each, the server's CPU time per request. To compare two versions of the server under the
 * same machine load, run this bench from each version's tree in turn (before, after, before, …)
 * and compare their p50s as a ratio.
 */
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { bodyFactory } from './lib/bodies.js';
import { BENCH_DATA, gitState, machine, writeResult } from './lib/env.js';
import { createBenchTenant, startServer } from './lib/looptrace.js';
import { cpuSecondsOf } from './lib/proc.js';
import { storeCallTotals, storeCallsPerRequest } from './lib/store-calls.js';
import { summary } from './lib/stats.js';
import { SPAN_TYPES } from './lib/synthetic.js';

const { values: args } = parseArgs({
  options: {
    spans: { type: 'string', default: '10000' },
    requests: { type: 'string', default: '100' },
    warmup: { type: 'string', default: '10' },
    variants: { type: 'string', default: 'full,tree' },
  },
});
const SPANS = Number(args.spans);
const REQUESTS = Number(args.requests);
const DATA_DIR = path.join(BENCH_DATA, 'trace-detail');

async function main() {
  const host = machine(); // before the bench adds its own load
  rmSync(DATA_DIR, { recursive: true, force: true });
  mkdirSync(DATA_DIR, { recursive: true });
  const tenant = await createBenchTenant(DATA_DIR, `bench-trace-detail-${Date.now()}`);
  // One trace of 10,000 spans is a ~12 MB ingest body: above the default 10 MiB body limit.
  const server = await startServer(DATA_DIR, { BODY_LIMIT_BYTES: String(256 * 1024 * 1024) });
  const headers = { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' };
  try {
    const spanTypes = Array.from({ length: SPANS }, (_, i) => SPAN_TYPES[i % SPAN_TYPES.length]!);
    const body = bodyFactory(1, Date.now(), { traces: 1, spanTypes }).body(0);
    const traceId = (JSON.parse(body) as { traces: { id: string }[] }).traces[0]!.id;
    const ingest = await fetch(`${server.url}/v1/ingest/batch`, { method: 'POST', headers, body });
    if (ingest.status >= 300) throw new Error(`POST /v1/ingest/batch: ${ingest.status} ${(await ingest.text()).slice(0, 300)}`);

    const get = async (query = ''): Promise<{ ms: number; firstByteMs: number; bytes: number; spans: number }> => {
      const start = performance.now();
      const res = await fetch(`${server.url}/v1/traces/${traceId}${query}`, { headers });
      const firstByteMs = performance.now() - start; // fetch resolves with the headers, sent with the first chunk
      const text = await res.text();
      const ms = performance.now() - start;
      if (res.status !== 200) throw new Error(`GET /v1/traces/${traceId}${query}: ${res.status} ${text.slice(0, 300)}`);
      return { ms, firstByteMs, bytes: Buffer.byteLength(text), spans: (JSON.parse(text) as { spans: unknown[] }).spans.length };
    };
    // Wait until every span is readable (the ingest acknowledgement may precede the read side).
    const deadline = Date.now() + 60_000;
    let probe = await get().catch(() => ({ ms: 0, firstByteMs: 0, bytes: 0, spans: 0 }));
    while (probe.spans < SPANS) {
      if (Date.now() > deadline) throw new Error(`only ${probe.spans} of ${SPANS} spans readable after 60 s`);
      await new Promise((r) => setTimeout(r, 200));
      probe = await get().catch(() => ({ ms: 0, firstByteMs: 0, bytes: 0, spans: 0 }));
    }
    // full: the detail; tree: the span tree without inputs, outputs and metadata (GET /v1/traces/{id}/tree).
    const paths: Record<string, string> = { full: '', tree: '/tree' };
    const variants = Object.fromEntries(
      args.variants.split(',').map((name) => {
        if (!(name in paths)) throw new Error(`--variants: ${name} is not one of ${Object.keys(paths).join(', ')}`);
        return [name, paths[name]!];
      }),
    );
    const latencies: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
    const firstBytes: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
    const bytes: Record<string, number> = {};
    // The server's CPU time per request (all its threads, the embedded ClickHouse's too): on a shared
    // machine less sensitive to the others' load than wall time.
    const serverCpuMs: Record<string, number> = {};
    const storeCalls: Record<string, ReturnType<typeof storeCallsPerRequest>> = {};
    for (const [name, q] of Object.entries(variants)) {
      for (let i = 0; i < Number(args.warmup); i += 1) await get(q);
      const callsBefore = await storeCallTotals(server.url);
      const cpuBefore = cpuSecondsOf(server.pid);
      for (let i = 0; i < REQUESTS; i += 1) {
        const r = await get(q);
        latencies[name]!.push(r.ms);
        firstBytes[name]!.push(r.firstByteMs);
        bytes[name] = r.bytes;
      }
      serverCpuMs[name] = +(((cpuSecondsOf(server.pid) - cpuBefore) * 1000) / REQUESTS).toFixed(1);
      storeCalls[name] = storeCallsPerRequest(callsBefore, await storeCallTotals(server.url), REQUESTS);
    }
    const result = {
      bench: 'trace-detail',
      date: new Date().toISOString(),
      machine: host,
      loadavg_1m_at_end: +(await import('node:os')).loadavg()[0]!.toFixed(2),
      code: gitState(),
      runtime: process.env.BENCH_RUNTIME === 'dist' ? 'dist' : 'tsx',
      trace: { spans: SPANS, ingest_body_bytes: Buffer.byteLength(body) },
      response_bytes: bytes,
      latency: Object.fromEntries(Object.entries(latencies).map(([k, v]) => [k, summary(v)])),
      first_byte: Object.fromEntries(Object.entries(firstBytes).map(([k, v]) => [k, summary(v)])),
      server_cpu_ms_per_request: serverCpuMs,
      // Includes the background jobs' calls in the same time (the embedded engine runs them in the server).
      store_calls_per_request: storeCalls,
      server_memory: server.memory(),
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`wrote ${writeResult('trace-detail', result)}`);
  } finally {
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

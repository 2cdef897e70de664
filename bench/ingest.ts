/**
 * npm run bench:ingest -- [--duration 30] [--latency-duration 20] [--connections 8] [--raw-requests 200]
 *
 * Sustained ingest through POST /v1/ingest/batch (100 traces × 10 spans per request) against the
 * raw insert rate of the very same rows into the same engine, measured in the same run:
 *   A. raw: the rows the API would write (project schema + normalizeTrace), written by the
 *      group-commit batcher's own writer in batches of 10 requests into a fresh embedded engine
 *      (chDB is one engine per process: the server cannot share it);
 *   B. API: the real server as a child process; autocannon at full speed with a few connections,
 *      then an open-loop run at half the peak rate for acknowledge latency; afterwards the spans
 *      actually in ClickHouse are counted.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { normalizeTrace } from '../src/modules/ingest/normalize.js';
import { traceInput } from '../src/modules/ingest/schemas.js';
import type { SpanRow, TraceRow } from '../src/modules/ingest/rows.js';
import { writeTraceBatch } from '../src/modules/ingest/writer.js';
import { bodyFactory, SPANS_PER_TRACE, TRACES_PER_REQUEST, type BodyFactory } from './lib/bodies.js';
import { openClickHouse } from './lib/clickhouse.js';
import { BENCH_DATA, benchStores, machine, writeResult } from './lib/env.js';
import { createBenchTenant, startServer, type BenchTenant } from './lib/looptrace.js';
import { pacedLoad } from './lib/paced.js';
import { ratio, summary } from './lib/stats.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '30' },
    'latency-duration': { type: 'string', default: '20' },
    connections: { type: 'string', default: '8' },
    'raw-requests': { type: 'string', default: '200' },
    'raw-batch': { type: 'string', default: '10' },
    templates: { type: 'string', default: '8' },
  },
});
const DURATION = Number(args.duration);
const LATENCY_DURATION = Number(args['latency-duration']);
const CONNECTIONS = Number(args.connections);
const RAW_REQUESTS = Number(args['raw-requests']);
const RAW_BATCH = Number(args['raw-batch']);
const SPANS_PER_REQUEST = TRACES_PER_REQUEST * SPANS_PER_TRACE;
const API_DIR = path.join(BENCH_DATA, 'ingest');
const RAW_DIR = path.join(BENCH_DATA, 'ingest-raw');

/** The rows POST /v1/ingest/batch would write for one request body. */
function rowsOf(body: string, tenant: BenchTenant): { traces: TraceRow[]; spans: SpanRow[] } {
  const traces: TraceRow[] = [];
  const spans: SpanRow[] = [];
  const scope = { tenantId: tenant.tenant_id, projectId: tenant.project_id, prices: new Map(), now: Date.now() };
  for (const raw of (JSON.parse(body) as { traces: unknown[] }).traces) {
    const normalized = normalizeTrace(traceInput.parse(raw), scope);
    if (Array.isArray(normalized)) throw new Error(`body does not normalize: ${JSON.stringify(normalized)}`);
    traces.push(normalized.trace);
    spans.push(...normalized.spans);
  }
  return { traces, spans };
}

/** Phase A: the same rows straight into a fresh engine with the same DDL, batch by batch; only inserts are timed. */
async function rawBaseline(bodies: BodyFactory, firstIndex: number) {
  rmSync(RAW_DIR, { recursive: true, force: true });
  const tenant = await createBenchTenant(RAW_DIR, 'bench-ingest-raw'); // migrate applies clickhouse/*.sql
  const ch = await openClickHouse(RAW_DIR);
  let insertMs = 0;
  let rows = 0;
  let spans = 0;
  try {
    for (let from = 0; from < RAW_REQUESTS; from += RAW_BATCH) {
      const batch = { traces: [] as TraceRow[], spans: [] as SpanRow[] };
      for (let i = from; i < Math.min(RAW_REQUESTS, from + RAW_BATCH); i += 1) {
        const r = rowsOf(bodies.body(firstIndex + i), tenant);
        batch.traces.push(...r.traces);
        batch.spans.push(...r.spans);
      }
      const start = performance.now();
      // Exactly the batcher's write (src/services.ts).
      await writeTraceBatch(ch, batch);
      insertMs += performance.now() - start;
      rows += batch.traces.length + batch.spans.length;
      spans += batch.spans.length;
    }
    const [stored] = await ch.rows<{ n: string }>('bench.count', 'SELECT count() AS n FROM spans WHERE tenant_id = {t:UUID}', { t: tenant.tenant_id });
    if (Number(stored!.n) !== spans) throw new Error(`raw baseline stored ${stored!.n} spans, inserted ${spans}`);
  } finally {
    await ch.closeFully();
  }
  const seconds = insertMs / 1000;
  return {
    requests: RAW_REQUESTS,
    batch_requests: RAW_BATCH,
    rows,
    spans,
    insert_seconds: +seconds.toFixed(3),
    rows_per_s: Math.round(rows / seconds),
    spans_per_s: Math.round(spans / seconds),
  };
}

async function main() {
  const host = machine(); // before the bench adds its own load
  const bodies = bodyFactory(Number(args.templates));
  console.log(`bodies: ${TRACES_PER_REQUEST} traces × ${SPANS_PER_TRACE} spans, ~${(bodies.bytesPerBody / 1e6).toFixed(2)} MB each`);
  let next = 0; // request counter: every body ever sent in this run has its own ids

  console.log(`A. raw insert baseline: ${RAW_REQUESTS} requests' rows in batches of ${RAW_BATCH} requests`);
  const raw = await rawBaseline(bodies, next);
  next += RAW_REQUESTS;
  console.log(`   ${raw.spans_per_s.toLocaleString()} spans/s (${raw.rows_per_s.toLocaleString()} rows/s)`);

  rmSync(API_DIR, { recursive: true, force: true });
  const tenant = await createBenchTenant(API_DIR, 'bench-ingest');
  const server = await startServer(API_DIR);
  const url = `${server.url}/v1/ingest/batch`;
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${tenant.api_key}` };
  let acknowledged = 0;
  let sent = 0; // requests that reached the server, answered or still in flight when a run ended
  let peak, latency, memory, single;
  try {
    // Warm-up: connections, JIT, caches (key lookup, price book); not measured.
    const warm = await pacedLoad({ url, headers, body: bodies.body, firstIndex: next, ratePerSecond: 5, seconds: 2, maxInFlight: 2 });
    next += warm.sent;
    sent += warm.sent;
    acknowledged += warm.ok;
    if (warm.ok !== warm.sent) throw new Error(`warm-up failed: ${JSON.stringify(warm.statuses)}`);

    // B0. One request at a time: the latency floor of a request that never waits for another.
    const alone: number[] = [];
    for (let i = 0; i < 20; i += 1) {
      const start = performance.now();
      const res = await fetch(url, { method: 'POST', headers, body: bodies.body(next++) });
      await res.arrayBuffer();
      sent += 1;
      if (!res.ok) throw new Error(`single request failed: ${res.status}`);
      acknowledged += 1;
      alone.push(performance.now() - start);
    }
    single = summary(alone);
    console.log(`B0. one request at a time: p50 ${single.p50_ms} ms, max ${single.max_ms} ms`);

    console.log(`B1. API at full speed: ${CONNECTIONS} connections, ${DURATION} s`);
    const result = await autocannon({
      url,
      method: 'POST',
      headers,
      connections: CONNECTIONS,
      duration: DURATION,
      timeout: 60,
      requests: [{ setupRequest: (req) => ({ ...req, body: bodies.body(next++) }) }],
    });
    acknowledged += result['2xx'];
    sent += result.requests.sent;
    const seconds = (result.finish.getTime() - result.start.getTime()) / 1000;
    const requestsPerS = result['2xx'] / seconds;
    peak = {
      connections: CONNECTIONS,
      seconds: +seconds.toFixed(2),
      requests_2xx: result['2xx'],
      non_2xx: result.non2xx,
      errors: result.errors,
      statuses: result.statusCodeStats,
      requests_per_s: +requestsPerS.toFixed(2),
      spans_per_s: Math.round(requestsPerS * SPANS_PER_REQUEST),
      latency_at_peak_ms: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
    };
    console.log(`    ${peak.spans_per_s.toLocaleString()} spans/s, ${peak.requests_per_s} req/s, p99 ${result.latency.p99} ms`);

    const rate = requestsPerS / 2;
    console.log(`B2. API at half the peak rate: ${rate.toFixed(1)} req/s open loop, ${LATENCY_DURATION} s`);
    const half = await pacedLoad({ url, headers, body: bodies.body, firstIndex: next, ratePerSecond: rate, seconds: LATENCY_DURATION });
    next += half.sent;
    sent += half.sent;
    acknowledged += half.ok;
    latency = {
      rate_req_per_s: +rate.toFixed(2),
      sent: half.sent,
      ok: half.ok,
      statuses: half.statuses,
      achieved_spans_per_s: Math.round((half.ok * SPANS_PER_REQUEST) / half.seconds),
      ...summary(half.latenciesMs),
    };
    console.log(`    p50 ${latency.p50_ms} ms, p99 ${latency.p99_ms} ms`);
    memory = server.memory();
  } finally {
    await server.stop();
  }

  // What was acknowledged must be in ClickHouse: count it with the server stopped.
  const ch = await openClickHouse(API_DIR);
  let stored;
  try {
    [stored] = await ch.rows<{ spans: string; traces: string }>(
      'bench.count',
      `SELECT (SELECT count() FROM spans WHERE tenant_id = {t:UUID}) AS spans, (SELECT count() FROM traces WHERE tenant_id = {t:UUID}) AS traces`,
      { t: tenant.tenant_id },
    );
  } finally {
    await ch.closeFully();
  }
  // autocannon stops with requests in flight: those may be committed without being counted as 2xx.
  const storedSpans = Number(stored!.spans);
  const verification = {
    acknowledged_spans: acknowledged * SPANS_PER_REQUEST,
    sent_spans: sent * SPANS_PER_REQUEST,
    stored_spans: storedSpans,
    stored_traces: Number(stored!.traces),
    ok: storedSpans >= acknowledged * SPANS_PER_REQUEST && storedSpans <= sent * SPANS_PER_REQUEST,
  };
  console.log(
    `    stored ${storedSpans.toLocaleString()} spans: ${verification.acknowledged_spans.toLocaleString()} acknowledged, ${verification.sent_spans.toLocaleString()} sent`,
  );

  const result = {
    bench: 'ingest',
    date: new Date().toISOString(),
    machine: host,
    clickhouse: benchStores().clickhouseUrl ? 'server' : 'embedded',
    body: { traces: TRACES_PER_REQUEST, spans_per_trace: SPANS_PER_TRACE, bytes: bodies.bytesPerBody },
    raw,
    api: { one_at_a_time: single, peak, half_rate: latency, server_rss_mib: memory, verification },
    ratio_api_to_raw: ratio(peak.spans_per_s, raw.spans_per_s),
    targets: { ratio_api_to_raw: '>= 0.40', p99_at_half_rate_ms: '<= 50' },
  };
  const file = writeResult('ingest', result);
  console.log(JSON.stringify({ ratio_api_to_raw: result.ratio_api_to_raw, p99_at_half_rate_ms: latency.p99_ms, verification }, null, 2));
  console.log(`results: ${path.relative(process.cwd(), file)}`);
  if (!verification.ok) process.exitCode = 1;
}

await main();
process.exit(process.exitCode ?? 0);

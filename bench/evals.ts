/**
 * npm run bench:evals -- [--traces 10000] [--concurrency 32]
 *
 * Builtin evaluations per second through the queue: `--traces` traces are ingested, then one
 * POST /v1/eval per trace (a levenshtein check against the trace's expected output) is sent with
 * `--concurrency` requests in flight; the clock runs from the first request until Postgres shows
 * every evaluation finished. Each evaluation is a real one: claimed in Postgres, its trace read
 * from ClickHouse, scored, and its result written back, by the server's own `evals` workers.
 *
 * Baseline in the same run: the same number of no-op BullMQ jobs on the same Redis, added in
 * bulk and consumed by a worker of the same concurrency as the server's `evals` worker (16): the
 * ceiling any queue-driven evaluation could reach on this machine. The ratio says how much of that
 * ceiling our per-evaluation store work leaves.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import postgres from 'postgres';
import { BENCH_DATA, benchStores, machine, writeResult } from './lib/env.js';
import { createBenchTenant, startServer, type BenchTenant, type RunningServer } from './lib/looptrace.js';
import { ratio } from './lib/stats.js';

const { values: args } = parseArgs({
  options: {
    traces: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '32' },
  },
});
const TRACES = Number(args.traces);
const CONCURRENCY = Number(args.concurrency);
const WORKER_CONCURRENCY = 16; // src/jobs/workers.ts, the `evals` registration

const wordsOf = (i: number) => `answer ${i} ${'lorem ipsum dolor sit amet '.repeat(1 + (i % 7))}`.trim();

async function ingest(server: RunningServer, tenant: BenchTenant): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < TRACES; start += 500) {
    const traces = Array.from({ length: Math.min(500, TRACES - start) }, (_, k) => {
      const i = start + k;
      const id = crypto.randomUUID();
      ids.push(id);
      const at = new Date(Date.UTC(2026, 10, 1, 12) + i * 1000);
      return {
        id,
        name: 'bench eval',
        input: `question ${i}`,
        output: wordsOf(i),
        metadata: { expected: wordsOf(i + 1) },
        spans: [{ id: crypto.randomUUID(), name: 'llm', type: 'llm', input: `question ${i}`, output: wordsOf(i), start_time: at.toISOString(), end_time: new Date(at.getTime() + 400).toISOString() }],
      };
    });
    const res = await fetch(`${server.url}/v1/ingest/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ traces }),
    });
    if (res.status !== 201) throw new Error(`ingest: ${res.status} ${(await res.text()).slice(0, 300)}`);
  }
  return ids;
}

async function finishedCount(sql: postgres.Sql, tenantId: string): Promise<{ done: number; failed: number }> {
  const [row] = await sql<{ done: number; failed: number }[]>`
    select count(*) filter (where status in ('completed', 'failed'))::int as done, count(*) filter (where status = 'failed')::int as failed
    from evaluations where tenant_id = ${tenantId}`;
  return row!;
}

async function throughQueue(server: RunningServer, tenant: BenchTenant, traceIds: string[], sql: postgres.Sql) {
  const config = { provider: 'builtin', preset: 'levenshtein' };
  const start = performance.now();
  let next = 0;
  const sender = async () => {
    while (next < traceIds.length) {
      const traceId = traceIds[next++]!;
      const res = await fetch(`${server.url}/v1/eval`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ trace_id: traceId, metric_name: 'similarity', config }),
      });
      if (res.status !== 202) throw new Error(`eval: ${res.status} ${(await res.text()).slice(0, 300)}`);
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, sender));
  const acceptedSeconds = (performance.now() - start) / 1000;
  let counts = await finishedCount(sql, tenant.tenant_id);
  while (counts.done < traceIds.length) {
    await new Promise((r) => setTimeout(r, 100));
    counts = await finishedCount(sql, tenant.tenant_id);
  }
  const seconds = (performance.now() - start) / 1000;
  return { evaluations: traceIds.length, failed: counts.failed, seconds, accepted_seconds: acceptedSeconds, evals_per_s: traceIds.length / seconds };
}

async function noopBaseline(n: number) {
  const stores = benchStores();
  const connection = { url: stores.redisUrl, maxRetriesPerRequest: null };
  const prefix = `${stores.redisPrefix}-noop`;
  const queue = new Queue('noop', { connection, prefix });
  await queue.obliterate({ force: true });
  let completed = 0;
  const allDone = new Promise<void>((resolve) => {
    const worker = new Worker('noop', async () => {}, { connection, prefix, concurrency: WORKER_CONCURRENCY });
    worker.on('completed', () => {
      completed += 1;
      if (completed === n) void worker.close().then(resolve);
    });
  });
  const start = performance.now();
  for (let i = 0; i < n; i += 1000) {
    await queue.addBulk(Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({ name: 'noop', data: { i: i + k }, opts: { removeOnComplete: true } })));
  }
  await allDone;
  const seconds = (performance.now() - start) / 1000;
  await queue.obliterate({ force: true });
  await queue.close();
  return { jobs: n, seconds, jobs_per_s: n / seconds };
}

async function main() {
  const host = machine();
  const dataDir = path.join(BENCH_DATA, 'evals');
  rmSync(dataDir, { recursive: true, force: true });
  const tenant = await createBenchTenant(dataDir, `bench-evals-${Date.now()}`);
  const sql = postgres(benchStores().databaseUrl, { max: 2, onnotice: () => {} });
  const server = await startServer(dataDir);
  let pipeline;
  try {
    const traceIds = await ingest(server, tenant);
    console.log(`ingested ${traceIds.length} traces; scoring them through POST /v1/eval and the evals queue`);
    pipeline = await throughQueue(server, tenant, traceIds, sql);
  } finally {
    await server.stop();
    await sql.end();
  }
  console.log(`pipeline: ${pipeline.evals_per_s.toFixed(0)} evals/s (${pipeline.seconds.toFixed(1)} s, ${pipeline.failed} failed)`);
  const baseline = await noopBaseline(TRACES);
  console.log(`baseline: ${baseline.jobs_per_s.toFixed(0)} no-op jobs/s`);
  const result = {
    bench: 'evals',
    machine: host,
    params: { traces: TRACES, concurrency: CONCURRENCY, worker_concurrency: WORKER_CONCURRENCY, check: 'builtin levenshtein' },
    pipeline,
    baseline_noop_jobs: baseline,
    ratio_evals_to_noop_jobs: ratio(pipeline.evals_per_s, baseline.jobs_per_s),
  };
  console.log(`ratio evals/s ÷ no-op jobs/s: ${result.ratio_evals_to_noop_jobs}`);
  console.log(`written to ${writeResult('evals', result)}`);
}

await main();

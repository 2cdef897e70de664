/**
 * npm run bench:dataset-export -- [--items 100000] [--runs 3]
 *
 * GET /v1/datasets/{id}/export?format=csv over real HTTP, the server (src/server.ts) running as a
 * child process, against the same rows produced by a raw `COPY (select …) TO STDOUT` through
 * postgres.js in this process, in the same run, on the same Postgres. The COPY selects the
 * export's own columns and formatting with a CSV header, so both answers must be byte-identical
 * (checked by SHA-256). Reports rows/s of both (median of --runs), their ratio, and the server's
 * RSS during the export: sampled every 50 ms, as a delta over its RSS just before the request.
 *
 * Data: an enterprise tenant (no row cap) made through the CLI, and one dataset of --items items
 * inserted directly (no trace registry check), every value a function of the item number: labels
 * cycle pass, fail, unlabeled; every third item has a span id; created_at steps 1 ms from a fixed
 * instant; ids derive from the dataset id and the item number.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createPg, type Sql } from '../src/stores/pg.js';
import { BENCH_DATA, benchStores, machine, writeResult } from './lib/env.js';
import { createBenchTenant, startServer, type BenchTenant } from './lib/looptrace.js';
import { memoryOf, sampleRss } from './lib/proc.js';
import { percentile, ratio } from './lib/stats.js';

const { values: args } = parseArgs({
  options: {
    items: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '3' },
  },
});

const DATA_DIR = path.join(BENCH_DATA, 'dataset-export');

interface Measured {
  rows: number;
  bytes: number;
  seconds: number;
  sha256: string;
}

/** Counts the rows (lines minus the header) and bytes of a CSV body and hashes it. */
async function consume(body: AsyncIterable<Uint8Array>): Promise<Omit<Measured, 'seconds'>> {
  const hash = createHash('sha256');
  let lines = 0;
  let bytes = 0;
  for await (const chunk of body) {
    hash.update(chunk);
    bytes += chunk.byteLength;
    for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, i + 1)) lines += 1;
  }
  return { rows: lines - 1, bytes, sha256: hash.digest('hex') };
}

async function timed(run: () => Promise<Omit<Measured, 'seconds'>>): Promise<Measured> {
  const start = performance.now();
  const measured = await run();
  return { ...measured, seconds: (performance.now() - start) / 1000 };
}

async function insertItems(sql: Sql, tenant: BenchTenant, count: number): Promise<string> {
  const [dataset] = await sql<{ id: string }[]>`
    insert into datasets (id, tenant_id, name) values (gen_random_uuid(), ${tenant.tenant_id}, 'export bench') returning id`;
  const id = dataset!.id;
  await sql`
    insert into dataset_items (id, tenant_id, dataset_id, trace_id, span_id, project_id, label, created_at)
    select md5(${id} || ':' || n)::uuid, ${tenant.tenant_id}, ${id}, md5('trace:' || n)::uuid,
           case when n % 3 = 0 then md5('span:' || n)::uuid end, ${tenant.project_id},
           (array['pass', 'fail', null])[n % 3 + 1], timestamptz '2026-01-01T00:00:00Z' + n * interval '1 millisecond'
    from generate_series(1, ${count}::int) as n`;
  await sql`analyze dataset_items`;
  return id;
}

/** The export's query as one COPY: same rows, order, columns and formatting (COPY takes no parameters). */
function rawCopy(sql: Sql, tenantId: string, datasetId: string) {
  for (const id of [tenantId, datasetId]) if (!/^[0-9a-f-]{36}$/.test(id)) throw new Error(`not a uuid: ${id}`);
  return sql.unsafe(`
    copy (
      select id, trace_id, span_id, coalesce(label, 'unlabeled') as label,
             to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at
      from dataset_items where tenant_id = '${tenantId}' and dataset_id = '${datasetId}' order by id
    ) to stdout with (format csv, header true)`);
}

async function apiRun(url: string, tenant: BenchTenant, datasetId: string, pid: number) {
  const before = memoryOf(pid).rssMiB;
  const rss = sampleRss(pid, 50);
  const measured = await timed(async () => {
    const res = await fetch(`${url}/v1/datasets/${datasetId}/export?format=csv`, { headers: { authorization: `Bearer ${tenant.api_key}` } });
    if (res.status !== 200) throw new Error(`export: ${res.status} ${(await res.text()).slice(0, 300)}`);
    if (res.headers.get('x-service-truncated') !== 'false') throw new Error('an enterprise export was truncated');
    return consume(res.body!);
  });
  const { maxSampledRssMiB, peakRssMiB, samples } = rss.stop();
  return { ...measured, rssBeforeMiB: before, rssDeltaMiB: Math.max(0, maxSampledRssMiB - before), peakRssMiB, samples };
}

const median = (values: number[]) => percentile(values, 50);

async function main() {
  const host = machine(); // before the bench adds its own load
  const items = Number(args.items);
  const runs = Number(args.runs);
  mkdirSync(DATA_DIR, { recursive: true });
  const tenant = await createBenchTenant(DATA_DIR, 'dataset-export-bench');
  const sql = createPg(benchStores().databaseUrl, { max: 2 });
  let datasetId: string;
  const raw: Measured[] = [];
  try {
    console.log(`inserting ${items.toLocaleString()} dataset items`);
    datasetId = await insertItems(sql, tenant, items);
    console.log('raw: COPY (select …) TO STDOUT through postgres.js, in this process (one warm-up, then --runs)');
    for (let i = 0; i <= runs; i++) {
      const r = await timed(async () => consume(await rawCopy(sql, tenant.tenant_id, datasetId).readable()));
      if (i > 0) raw.push(r);
      console.log(`  ${i === 0 ? 'warm-up ' : ''}${r.rows.toLocaleString()} rows in ${r.seconds.toFixed(3)} s`);
    }
  } finally {
    await sql.end();
  }

  console.log('API: GET /v1/datasets/{id}/export?format=csv over HTTP (one warm-up, then --runs)');
  const server = await startServer(DATA_DIR);
  const api: Awaited<ReturnType<typeof apiRun>>[] = [];
  try {
    for (let i = 0; i <= runs; i++) {
      const r = await apiRun(server.url, tenant, datasetId, server.pid);
      if (i > 0) api.push(r);
      console.log(`  ${i === 0 ? 'warm-up ' : ''}${r.rows.toLocaleString()} rows in ${r.seconds.toFixed(3)} s, RSS +${r.rssDeltaMiB.toFixed(1)} MiB over ${r.rssBeforeMiB.toFixed(0)} MiB`);
    }
  } finally {
    await server.stop();
  }

  for (const r of [...raw, ...api]) {
    if (r.rows !== items) throw new Error(`expected ${items} rows, got ${r.rows}`);
    if (r.sha256 !== raw[0]!.sha256) throw new Error('the API export and the raw COPY differ');
  }
  const apiRate = items / median(api.map((r) => r.seconds));
  const rawRate = items / median(raw.map((r) => r.seconds));
  const summary = {
    rows: items,
    mib: +(raw[0]!.bytes / 2 ** 20).toFixed(1),
    api_rows_per_s: Math.round(apiRate),
    raw_rows_per_s: Math.round(rawRate),
    ratio_api_to_raw: ratio(apiRate, rawRate),
    server_rss_delta_mib_max: +Math.max(...api.map((r) => r.rssDeltaMiB)).toFixed(1),
  };
  const file = writeResult('dataset-export', {
    bench: 'dataset-export',
    date: new Date().toISOString(),
    machine: host,
    summary,
    raw: raw.map((r) => ({ seconds: +r.seconds.toFixed(3) })),
    api: api.map((r) => ({
      seconds: +r.seconds.toFixed(3),
      server_rss_mib: { before: +r.rssBeforeMiB.toFixed(1), delta_max_sampled: +r.rssDeltaMiB.toFixed(1), peak_vmhwm: +r.peakRssMiB.toFixed(1), samples: r.samples },
    })),
    identical_bytes: true,
  });
  console.log(JSON.stringify(summary, null, 2));
  console.log(`results: ${file}`);
}

await main();
process.exit(0);

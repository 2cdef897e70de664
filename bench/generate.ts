/**
 * npm run bench:generate -- --scale 0.01
 * Generates the query/export dataset: scale 1.0 = 10M traces / 100M spans, made inside ClickHouse
 * (bench/lib/generator.ts) under a fresh enterprise tenant, into bench/.data/dataset-<scale> (the
 * bench server's data directory; no server may run on it) or into CLICKHOUSE_URL when that is set.
 */
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { openClickHouse } from './lib/clickhouse.js';
import { datasetDir, writeDataset, type Dataset } from './lib/dataset.js';
import { benchStores, looptraceEnv } from './lib/env.js';
import { FULL_SCALE_TRACES, WINDOW_DAYS, generateDataset, waitForMerges } from './lib/generator.js';
import { createBenchTenant, looptraceCli } from './lib/looptrace.js';
import { registerGenerated } from './lib/registry.js';
import { loadConfig } from '../src/config.js';
import type { ClickHouseStore } from '../src/stores/clickhouse.js';
import { createPg } from '../src/stores/pg.js';
import { QUERY_FILTER, SPANS_PER_TRACE } from './lib/synthetic.js';
import { TAG_PAIR_SEPARATOR } from '../src/platform/tag-pairs.js';

export async function generate(scale: number, chunkTraces = 500_000, settleSeconds = 1_800): Promise<Dataset> {
  const traces = Math.round(FULL_SCALE_TRACES * scale);
  if (traces < 1) throw new Error('--scale too small');
  const server = benchStores().clickhouseUrl;
  const dir = datasetDir(scale); // with CLICKHOUSE_URL it holds only secrets and dataset.json
  rmSync(dir, { recursive: true, force: true });
  const started = performance.now();
  const tenant = await createBenchTenant(dir, `bench-dataset-${scale}`);
  const ch = await openClickHouse(dir);
  try {
    const endMs = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    console.log(`generating ${traces.toLocaleString()} traces / ${(traces * SPANS_PER_TRACE).toLocaleString()} spans`);
    const timings = await generateDataset(ch, {
      tenantId: tenant.tenant_id,
      projectId: tenant.project_id,
      traces,
      endMs,
      chunkTraces,
      onChunk: (done, total) => console.log(`  ${done.toLocaleString()} / ${total.toLocaleString()} traces (${((performance.now() - started) / 1000).toFixed(0)} s)`),
    });
    const [counts] = await ch.rows<{ traces: string; spans: string; matching: string; tagged: string }>(
      'bench.generate.check',
      `SELECT (SELECT count() FROM traces WHERE tenant_id = {t:UUID}) AS traces,
              (SELECT count() FROM spans WHERE tenant_id = {t:UUID}) AS spans,
              (SELECT countIf(has(tag_pairs, {pair:String})) FROM traces WHERE tenant_id = {t:UUID}) AS tagged,
              (SELECT countIf(has(tag_pairs, {pair:String}) AND latency_ms >= {lat:UInt64} AND total_token_count >= {tok:UInt64})
                 FROM traces WHERE tenant_id = {t:UUID}) AS matching`,
      {
        t: tenant.tenant_id,
        pair: `${QUERY_FILTER.tag_key}${TAG_PAIR_SEPARATOR}${QUERY_FILTER.tag_value}`,
        lat: QUERY_FILTER.latency_min,
        tok: QUERY_FILTER.token_count_min,
      },
    );
    if (Number(counts!.traces) !== traces || Number(counts!.spans) !== traces * SPANS_PER_TRACE) {
      throw new Error(`generated ${counts!.traces} traces / ${counts!.spans} spans, expected ${traces} / ${traces * SPANS_PER_TRACE}`);
    }
    const registered = await registerTraces(ch, dir, tenant.tenant_id, endMs);
    console.log('waiting for the merges the inserts started');
    const merges = await waitForMerges(ch, settleSeconds);
    const dataset: Dataset = {
      scale,
      traces,
      spans: traces * SPANS_PER_TRACE,
      ...tenant,
      window: { from: new Date(endMs - WINDOW_DAYS * 86_400_000).toISOString(), to: new Date(endMs).toISOString() },
      generated_at: new Date().toISOString(),
      registered,
      clickhouse: server ? 'server' : 'embedded',
      timings_s: {
        spans_insert: +(timings.spansMs / 1000).toFixed(1),
        traces_insert: +(timings.tracesMs / 1000).toFixed(1),
        tokens_fill: +(timings.tokensMs / 1000).toFixed(1),
        merges_settled: merges.settled ? +merges.seconds.toFixed(1) : -1,
        total: +((performance.now() - started) / 1000).toFixed(1),
      },
      filter_selectivity: {
        tag: +(Number(counts!.tagged) / traces).toFixed(4),
        latency_token_tag: +(Number(counts!.matching) / traces).toFixed(4),
      },
    };
    writeDataset(dataset);
    return dataset;
  } finally {
    await ch.closeFully();
  }
}

/** Registers the dataset's traces in the trace registry of the bench database (bench/lib/registry.ts). */
async function registerTraces(ch: ClickHouseStore, dir: string, tenantId: string, endMs: number): Promise<number> {
  const sql = createPg(loadConfig(looptraceEnv(dir)).databaseUrl);
  try {
    const started = performance.now();
    const count = await registerGenerated(ch, sql, tenantId, { fromMs: endMs - WINDOW_DAYS * 86_400_000, toMs: endMs });
    console.log(`registered ${count.toLocaleString()} traces in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    return count;
  } finally {
    await sql.end();
  }
}

/**
 * A dataset made before its generator registered traces, brought up to date: the stores'
 * migrations (with embedded ClickHouse, migration 007 copies the traces table: minutes at scale 1),
 * the registry, and the merges both started.
 */
export async function completeDataset(d: Dataset, settleSeconds = 1_800): Promise<Dataset> {
  const dir = datasetDir(d.scale);
  console.log(`dataset ${d.scale}: migrating its stores and registering its traces`);
  await looptraceCli(dir, ['migrate']);
  const ch = await openClickHouse(dir);
  try {
    const registered = await registerTraces(ch, dir, d.tenant_id, Date.parse(d.window.to));
    const merges = await waitForMerges(ch, settleSeconds);
    const completed = { ...d, registered, timings_s: { ...d.timings_s, completion_merges_settled: merges.settled ? +merges.seconds.toFixed(1) : -1 } };
    writeDataset(completed);
    return completed;
  } finally {
    await ch.closeFully();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      scale: { type: 'string', default: '0.01' },
      chunk: { type: 'string', default: '500000' },
      'settle-seconds': { type: 'string', default: '1800' },
    },
  });
  const dataset = await generate(Number(values.scale), Number(values.chunk), Number(values['settle-seconds']));
  console.log(JSON.stringify({ ...dataset, api_key: `(in ${datasetDir(dataset.scale)}/dataset.json)` }, null, 2));
  process.exit(0);
}

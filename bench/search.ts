/**
 * npm run bench:search -- [--vectors 1000000] [--dim 384] [--queries 200]
 *
 * Semantic span search on one project of --vectors clustered vectors (bench/lib/vectors.ts,
 * seeded): the rate at which they are stored (through the store as the embedder job writes them:
 * batches whose vectors travel as base64 Float32 bytes), against the same rows sent as JSON
 * numbers (a sample, into another project); the rate at which the background indexer builds
 * their HNSW table; then top-10 latency of the indexed search against the exact search in the
 * same run, and the indexed search's recall@10 against the exact one.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { drainPending } from 'chdb';
import { loadConfig } from '../src/config.js';
import { VectorDimensions } from '../src/modules/search/dimensions-service.js';
import { hnswTable, searchIndexRepository } from '../src/modules/search/index-repo.js';
import { HnswIndexer } from '../src/modules/search/indexer.js';
import { searchRepository, type VectorRow } from '../src/modules/search/repo.js';
import { rankHits } from '../src/modules/search/service.js';
import { searchStateRepository } from '../src/modules/search/state-repo.js';
import { millisToClickHouse } from '../src/platform/time.js';
import { openStores } from '../src/runtime.js';
import { BENCH_DATA, looptraceEnv, machine, writeResult } from './lib/env.js';
import { ratio, summary, timed } from './lib/stats.js';
import { clusteredVectors, DEFAULT_SHAPE } from './lib/vectors.js';

const { values: args } = parseArgs({
  options: {
    vectors: { type: 'string', default: '1000000' },
    dim: { type: 'string', default: '384' },
    queries: { type: 'string', default: '200' },
    batch: { type: 'string', default: '10000' },
    warmup: { type: 'string', default: '10' },
    'settle-seconds': { type: 'string', default: '900' },
  },
});
const N = Number(args.vectors);
const DIM = Number(args.dim);
const K = 10;
const SHAPE_SEED = 384_001;
const JSON_SAMPLE = 20_000;
const JSON_COLUMNS = ['tenant_id', 'project_id', 'span_id', 'trace_id', 'span_name', 'span_type', 'created_at', 'dim', 'vector'];

async function main() {
  const host = machine(); // before the bench adds its own load
  const dataDir = path.join(BENCH_DATA, `search-${N}`);
  rmSync(dataDir, { recursive: true, force: true });
  const stores = await openStores(loadConfig(looptraceEnv(dataDir)), { migrate: true });
  const { sql, ch } = stores;
  const tenantId = randomUUID();
  const projectId = randomUUID();
  await sql`insert into tenants (id, name, plan) values (${tenantId}, 'bench search', 'enterprise')`;
  const repo = searchRepository(ch);
  const state = searchStateRepository(sql);
  try {
    await new VectorDimensions(state).claim(tenantId, projectId, DIM);
    const [{ version }] = (await ch.rows<{ version: string }>('bench.version', 'SELECT version() AS version')) as [{ version: string }];

    console.log(`storing ${N.toLocaleString()} vectors of ${DIM} dimensions (batches of ${args.batch})`);
    const insert = await store(N, (rows) => repo.insert(rows), tenantId, projectId);
    console.log(`  ${insert.rows_per_s.toLocaleString()} rows/s (${insert.seconds} s in inserts)`);
    const sample = Math.min(N, JSON_SAMPLE);
    const asJson = await store(sample, (rows) => ch.insert('span_vectors', rows.map((r) => ({ ...r, dim: DIM })), JSON_COLUMNS), tenantId, randomUUID());
    console.log(`  baseline, ${sample.toLocaleString()} of them as JSON numbers: ${asJson.rows_per_s.toLocaleString()} rows/s`);

    console.log('building the HNSW table (the background indexer, one pass)');
    const indexer = new HnswIndexer(searchIndexRepository(ch), state, { warn: () => {} }, { minVectors: 0, lagSeconds: 0 });
    const build = await timed(() => indexer.pass());
    if (build.value.vectors !== N) throw new Error(`the indexer loaded ${build.value.vectors} vectors, not ${N}`);
    const index = { seconds: +(build.ms / 1000).toFixed(2), rows_per_s: Math.round(N / (build.ms / 1000)) };
    console.log(`  ${index.rows_per_s.toLocaleString()} rows/s (${index.seconds} s)`);
    const settled = await settle(ch, Number(args['settle-seconds']));
    const loadedUntil = (await state.indexState(tenantId, projectId))!.loaded_until!;

    const queries = Array.from({ length: Number(args.queries) }, clusteredVectors(SHAPE_SEED, 7, DIM));
    const exact = (q: number[]) => repo.exact(tenantId, projectId, DIM, q, K).then((h) => rankHits(h, K, -1));
    const indexed = (q: number[]) => repo.indexed(tenantId, projectId, DIM, q, K, loadedUntil).then((h) => rankHits(h, K, -1));
    // Loads the index into the engine's vector index cache and the vectors into the page cache.
    for (const q of queries.slice(0, Number(args.warmup))) await Promise.all([exact(q), indexed(q)]);
    const exactMs: number[] = [];
    const indexedMs: number[] = [];
    const recalls: number[] = [];
    for (const q of queries) {
      const truth = await timed(() => exact(q));
      const approx = await timed(() => indexed(q));
      exactMs.push(truth.ms);
      indexedMs.push(approx.ms);
      const want = new Set(truth.value.map((r) => r.span_id));
      recalls.push(approx.value.filter((r) => want.has(r.span_id)).length / want.size);
    }
    const latency = { exact: summary(exactMs), indexed: summary(indexedMs) };
    const recall = { mean: +(recalls.reduce((a, b) => a + b, 0) / recalls.length).toFixed(4), min: Math.min(...recalls) };
    const result = {
      bench: 'search',
      date: new Date().toISOString(),
      machine: host,
      engine: { clickhouse: version, embedded: ch.embedded },
      data: { vectors: N, dim: DIM, seed: SHAPE_SEED, shape: DEFAULT_SHAPE, queries: queries.length, k: K },
      insert: {
        ...insert,
        path: 'the store into span_vectors_input: JSONCompactEachRow, each vector base64 of its Float32 bytes, decoded by the engine',
        baseline_json_numbers: { ...asJson, rows: sample, path: 'the store into span_vectors: JSONCompactEachRow, vectors as JSON numbers' },
        ratio_to_baseline: ratio(insert.rows_per_s, asJson.rows_per_s),
      },
      index_build: { ...index, hnsw_parts_after_settling: settled.parts, merges_settled: settled.settled },
      hnsw_index_used_by_plan: await indexUsed(ch, tenantId, projectId, queries[0]!),
      latency_ms: latency,
      ratio_indexed_p99_to_exact_p99: ratio(latency.indexed.p99_ms, latency.exact.p99_ms),
      recall_at_10: recall,
      targets: { recall_at_10: '>= 0.95', ratio_indexed_p99_to_exact_p99: '<= 0.25' },
    };
    const file = writeResult('search', result);
    console.log(JSON.stringify({ insert, index_build: index, latency_ms: latency, ratio: result.ratio_indexed_p99_to_exact_p99, recall }, null, 2));
    console.log(`results: ${file}`);
  } finally {
    await sql`delete from tenants where id = ${tenantId}`;
    await stores.close();
    if (ch.embedded) await drainPending();
  }
}

/** Stores `count` vectors in batches; only `write` (serialising included) is timed, not the generator. */
async function store(count: number, write: (rows: VectorRow[]) => Promise<void>, tenantId: string, projectId: string) {
  const next = clusteredVectors(SHAPE_SEED, 1, DIM);
  const batch = Number(args.batch);
  const createdAt = millisToClickHouse(Date.now());
  let ms = 0;
  for (let start = 0; start < count; start += batch) {
    const rows: VectorRow[] = Array.from({ length: Math.min(batch, count - start) }, (_, i) => ({
      tenant_id: tenantId,
      project_id: projectId,
      span_id: randomUUID(),
      trace_id: randomUUID(),
      span_name: `span ${start + i}`,
      span_type: 'llm',
      created_at: createdAt,
      vector: next(),
    }));
    ms += (await timed(() => write(rows))).ms;
  }
  return { seconds: +(ms / 1000).toFixed(2), rows_per_s: Math.round(count / (ms / 1000)) };
}

/** Waits until no merge runs on the two tables (a merge of the HNSW table rebuilds its graph), at most `seconds`. */
async function settle(ch: Awaited<ReturnType<typeof openStores>>['ch'], seconds: number) {
  const tables = ['span_vectors', hnswTable(DIM)];
  const deadline = Date.now() + seconds * 1000;
  let running = 1;
  while (running > 0 && Date.now() < deadline) {
    const [row] = await ch.rows<{ n: number | string }>('bench.merges', 'SELECT count() AS n FROM system.merges WHERE database = currentDatabase() AND table IN {t:Array(String)}', { t: tables });
    running = Number(row?.n ?? 0);
    if (running > 0) await new Promise((r) => setTimeout(r, 1_000));
  }
  const [parts] = await ch.rows<{ n: number | string }>('bench.parts', 'SELECT count() AS n FROM system.parts WHERE database = currentDatabase() AND active AND table = {t:String}', { t: hnswTable(DIM) });
  return { settled: running === 0, parts: Number(parts?.n ?? 0) };
}

/** Whether the engine's plan for the HNSW side reads the vector similarity index (not a scan). */
async function indexUsed(ch: Awaited<ReturnType<typeof openStores>>['ch'], tenantId: string, projectId: string, q: number[]) {
  const rows = await ch.rows<{ explain: string }>(
    'bench.explain',
    `EXPLAIN indexes = 1 SELECT span_id FROM ${hnswTable(DIM)} WHERE tenant_id = {t:UUID} AND project_id = {p:UUID}
     ORDER BY cosineDistance(vector, {q:Array(Float32)}) LIMIT ${K}`,
    { t: tenantId, p: projectId, q },
  );
  return rows.some((r) => r.explain.includes('vector_similarity'));
}

await main();
process.exit(0);

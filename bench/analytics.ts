/**
 * npm run bench:analytics -- [--scale 1] [--searches 100] [--unindexed 5] [--sql 50]
 *
 * Issue 3.4's reads on the generated dataset (100M spans at scale 1.0):
 * - Full-text search: GET /v1/traces?q=<word>&limit=50 through the real server, for words of known
 *   rarity that the generator puts in span inputs (bench/lib/generator.ts: `order<k>` ≈100 traces
 *   each at scale 1, `sku<k>` ≈10,000, and both together), p50/p99. Then, with the server stopped,
 *   the same listing run in this process (the traces module's own filter, slices and SQL), once with
 *   the token index (trace_tokens) and once with `use_skip_indexes = 0`: the index's speed-up on the same queries.
 * - Tenant SQL: POST /v1/sql for three queries (one trace's spans; an aggregate over a day of traces;
 *   the same over a day of spans, whose time is no sorting key of spans: it reads every span)
 *   against the same questions asked of the raw tables in this process (tenant filter and FINAL
 *   written by hand): the overhead of the checks, the views and the HTTP round trip.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { traceLocator } from '../src/modules/traces/locator-repo.js';
import { traceRepository } from '../src/modules/traces/repo.js';
import { TraceService } from '../src/modules/traces/service.js';
import { createPg } from '../src/stores/pg.js';
import type { ClickHouseStore } from '../src/stores/clickhouse.js';
import { openClickHouse } from './lib/clickhouse.js';
import { datasetServer } from './lib/dataset-server.js';
import { datasetDir, type Dataset } from './lib/dataset.js';
import { gitState, looptraceEnv, machine, writeResult } from './lib/env.js';
import { ORDER_WORDS, SKU_WORDS } from './lib/generator.js';
import { ratio, summary } from './lib/stats.js';

const { values: args } = parseArgs({
  options: {
    scale: { type: 'string', default: '0.01' },
    searches: { type: 'string', default: '100' },
    unindexed: { type: 'string', default: '5' },
    sql: { type: 'string', default: '50' },
    warmup: { type: 'string', default: '5' },
    // api: the server runs no background jobs (LOOPTRACE_ROLE=api), as an API node beside worker
    // nodes; all (default): one process does both, as embedded ClickHouse requires.
    role: { type: 'string', default: 'all' },
  },
});
const SEARCHES = Number(args.searches);
const PAGE = 50;

/** Deterministic words of each kind: the same ones through the API and raw. */
const words = (prefix: string, modulo: number, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${(i * 7919 + 13) % modulo}`);
const KINDS = {
  rare: (n: number) => words('order', ORDER_WORDS, n),
  common: (n: number) => words('sku', SKU_WORDS, n),
  both: (n: number) => words('order', ORDER_WORDS, n).map((w, i) => `${w} sku${(i * 7919 + 13) % ORDER_WORDS % SKU_WORDS}`),
} as const;
type Kind = keyof typeof KINDS;

const sqlQueries = (d: Dataset, traceId: string, dayStart: string) => ({
  one_trace: {
    api: `SELECT name, type, latency_ms FROM spans WHERE trace_id = '${traceId}' ORDER BY start_time`,
    raw: `SELECT name, type, latency_ms FROM spans FINAL WHERE tenant_id = '${d.tenant_id}' AND trace_id = '${traceId}' ORDER BY start_time`,
  },
  traces_day_by_model: {
    api: `SELECT model, count() AS traces, round(avg(latency_ms)) AS avg_ms, sum(total_token_count) AS tokens FROM traces WHERE started_at >= '${dayStart}' GROUP BY model ORDER BY model`,
    raw: `SELECT model, count() AS traces, round(avg(latency_ms)) AS avg_ms, sum(total_token_count) AS tokens FROM traces FINAL WHERE tenant_id = '${d.tenant_id}' AND is_deleted = 0 AND started_at >= '${dayStart}' GROUP BY model ORDER BY model`,
  },
  day_by_model: {
    api: `SELECT model, count() AS calls, round(avg(latency_ms)) AS avg_ms FROM spans WHERE type = 'llm' AND start_time >= '${dayStart}' GROUP BY model ORDER BY model`,
    raw: `SELECT model, count() AS calls, round(avg(latency_ms)) AS avg_ms FROM spans FINAL WHERE tenant_id = '${d.tenant_id}' AND type = 'llm' AND start_time >= '${dayStart}' GROUP BY model ORDER BY model`,
  },
});

async function timedMs<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await work();
  return { ms: performance.now() - start, value };
}

async function apiPhase(d: Dataset, sqlOf: (traceId: string) => ReturnType<typeof sqlQueries>) {
  const { server, get } = await datasetServer(d.scale, { LOOPTRACE_ROLE: args.role });
  const post = (body: object) =>
    fetch(`${server.url}/v1/sql`, { method: 'POST', headers: { authorization: `Bearer ${d.api_key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  try {
    const search = async (q: string) => {
      const res = await get(`/v1/traces?${new URLSearchParams({ q, limit: String(PAGE) })}`);
      const body = (await res.json()) as { traces: { id: string }[] };
      if (res.status !== 200) throw new Error(`search ${q}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      return body.traces;
    };
    const [sample] = await search(KINDS.rare(1)[0]!);
    if (!sample) throw new Error('the rare word matched nothing: regenerate the dataset with this generator');
    for (const q of KINDS.common(Number(args.warmup))) await search(q);
    const searches: Record<string, { ms: number[]; hits: number[] }> = {};
    // Interleaved kinds, so all three share whatever else the machine does.
    const lists = Object.fromEntries(Object.entries(KINDS).map(([k, f]) => [k, f(SEARCHES)]));
    for (let i = 0; i < SEARCHES; i += 1) {
      for (const kind of Object.keys(KINDS) as Kind[]) {
        const { ms, value } = await timedMs(() => search(lists[kind]![i]!));
        (searches[kind] ??= { ms: [], hits: [] }).ms.push(ms);
        searches[kind].hits.push(value.length);
      }
    }
    const queries = sqlOf(sample.id);
    const sql: Record<string, number[]> = {};
    const sqlRefused: Record<string, { count: number; last: string }> = {};
    for (let i = 0; i < Number(args.sql); i += 1) {
      for (const [name, q] of Object.entries(queries)) {
        const { ms, value } = await timedMs(async () => {
          const res = await post({ query: q.api });
          return { status: res.status, text: await res.text() };
        });
        // A refusal (a bound passed at this scale) is a result too: counted, with its answer, not timed.
        if (value.status !== 200) (sqlRefused[name] ??= { count: 0, last: '' }).count += 1;
        if (value.status !== 200) sqlRefused[name]!.last = `${value.status} ${value.text.slice(0, 300)}`;
        else (sql[name] ??= []).push(ms);
      }
    }
    return { searches, sql, sqlRefused, sampleTraceId: sample.id };
  } finally {
    await server.stop();
  }
}

/** The store with one setting added to every read: use_skip_indexes on or off. */
function withSkipIndexes(ch: ClickHouseStore, on: boolean): ClickHouseStore {
  const use_skip_indexes = on ? 1 : 0;
  return Object.assign(Object.create(ch) as ClickHouseStore, {
    rows: <T>(name: string, query: string, params?: Record<string, unknown>, settings = {}) => ch.rows<T>(name, query, params, { ...settings, use_skip_indexes }),
  });
}

async function rawPhase(d: Dataset, queries: ReturnType<typeof sqlQueries>) {
  const ch = await openClickHouse(datasetDir(d.scale));
  const pg = createPg(loadConfig(looptraceEnv(datasetDir(d.scale))).databaseUrl);
  try {
    // TraceService.list itself, on this process's stores: the search narrowed by the token index (trace_tokens).
    const listing = async (store: ClickHouseStore, q: string) =>
      (await new TraceService(traceRepository(store), traceLocator(pg), { depth: async () => 0 }).list(d.tenant_id, { q }, { limit: PAGE })).traces;
    const indexed = withSkipIndexes(ch, true);
    const unindexed = withSkipIndexes(ch, false);
    const search: Record<string, { indexed_ms: number[]; unindexed_ms: number[]; hits: number[] }> = {};
    for (const kind of Object.keys(KINDS) as Kind[]) {
      const entry = (search[kind] = { indexed_ms: [] as number[], unindexed_ms: [] as number[], hits: [] as number[] });
      for (const q of KINDS[kind](SEARCHES)) {
        const { ms, value } = await timedMs(() => listing(indexed, q));
        entry.indexed_ms.push(ms);
        entry.hits.push(Math.min(value.length, PAGE));
      }
      // --unindexed 0 skips it: without the index every lookup reads every token row of the tenant.
      for (const q of KINDS[kind](Number(args.unindexed))) entry.unindexed_ms.push((await timedMs(() => listing(unindexed, q))).ms);
      console.log(`  raw ${kind}: indexed p50 ${summary(entry.indexed_ms).p50_ms} ms, unindexed p50 ${summary(entry.unindexed_ms).p50_ms} ms`);
    }
    const sql: Record<string, number[]> = {};
    for (let i = 0; i < Number(args.sql); i += 1) {
      for (const [name, q] of Object.entries(queries)) {
        const run = await timedMs(() => ch.text(`bench.raw.${name}`, q.raw, 'JSONCompact').then(() => true, () => false));
        if (run.value) (sql[name] ??= []).push(run.ms);
      }
    }
    return { search, sql };
  } finally {
    await ch.closeFully();
    await pg.end();
  }
}

async function main() {
  const host = machine(); // before the bench adds its own load
  const scale = Number(args.scale);
  const probe = await datasetServer(scale); // generates the dataset when missing
  const d = probe.dataset;
  await probe.server.stop();
  const dayStart = new Date(Date.parse(d.window.to) - 86_400_000).toISOString().replace('T', ' ').replace('Z', '');
  console.log(`API: ${SEARCHES} searches of each kind, ${args.sql} SQL queries of each kind`);
  const api = await apiPhase(d, (traceId) => sqlQueries(d, traceId, dayStart));
  console.log('raw: the same listings in this process, with and without the token index; the SQL questions on the raw tables');
  const raw = await rawPhase(d, sqlQueries(d, api.sampleTraceId, dayStart));

  const searchResults = Object.fromEntries(
    (Object.keys(KINDS) as Kind[]).map((kind) => {
      const a = summary(api.searches[kind]!.ms);
      const r = raw.search[kind]!;
      const indexed = summary(r.indexed_ms);
      const unindexed = summary(r.unindexed_ms);
      return [
        kind,
        {
          example: KINDS[kind](1)[0],
          api_ms: a,
          // Where the tail is: the slowest searches with their place in the run (0 = first of the kind).
          api_slowest: api.searches[kind]!.ms.map((ms, i) => ({ i, ms: +ms.toFixed(1) })).sort((x, y) => y.ms - x.ms).slice(0, 5),
          mean_hits_per_page: +(api.searches[kind]!.hits.reduce((x, y) => x + y, 0) / SEARCHES).toFixed(1),
          raw_indexed_ms: indexed,
          raw_unindexed_ms: unindexed,
          index_speedup_p50: ratio(unindexed.p50_ms, indexed.p50_ms),
          api_p99_to_unindexed_p99: ratio(a.p99_ms, unindexed.p99_ms),
        },
      ];
    }),
  );
  const sqlResults = Object.fromEntries(
    [...new Set([...Object.keys(api.sql), ...Object.keys(api.sqlRefused)])].map((name) => {
      const a = summary(api.sql[name] ?? []);
      const r = summary(raw.sql[name] ?? []);
      const refused = api.sqlRefused[name];
      return [name, { api_ms: a, raw_ms: r, overhead_p50_ms: +(a.p50_ms - r.p50_ms).toFixed(1), ratio_p50_api_to_raw: ratio(a.p50_ms, r.p50_ms), ...(refused ? { api_refused: refused } : {}) }];
    }),
  );
  const result = {
    bench: 'analytics',
    date: new Date().toISOString(),
    machine: host,
    dataset: { scale: d.scale, traces: d.traces, spans: d.spans },
    server_role: args.role,
    code: gitState(),
    search: searchResults,
    sql: sqlResults,
    targets: { search_api_p99_ms: '<= 200 at 100M spans', sql: 'overhead against the raw query' },
  };
  const file = writeResult('analytics', result);
  console.log(JSON.stringify({ search: searchResults, sql: sqlResults }, null, 2));
  console.log(`results: ${file}`);
}

await main();
process.exit(0);

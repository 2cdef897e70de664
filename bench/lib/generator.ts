/**
 * Synthetic traces and spans made inside ClickHouse with INSERT … SELECT FROM numbers(): every
 * value is a deterministic function of the trace number n (and span index j), so a dataset of a
 * given scale is the same whenever it is generated, and nothing crosses the client boundary.
 */
import { readFileSync } from 'node:fs';
import { findPrice } from '../../src/modules/pricing/prices.js';
import { TAG_PAIR_SEPARATOR } from '../../src/platform/tag-pairs.js';
import { millisToClickHouse } from '../../src/platform/time.js';
import type { ClickHouseStore } from '../../src/stores/clickhouse.js';
import { renderClickHouseDdl, splitStatements } from '../../src/stores/migrate.js';
import {
  CUSTOMERS,
  ENVS,
  FAILURE_ERRORS,
  FAILURE_PERCENT,
  FAILURE_TYPES,
  MODELS,
  PROSE,
  REGIONS,
  SPAN_TYPES,
  SPANS_PER_TRACE,
  TEXT_MIN,
  TEXT_SPREAD,
  TRACE_NAMES,
  ZERO_TOKEN_PERCENT,
} from './synthetic.js';

export const FULL_SCALE_TRACES = 10_000_000;
export const WINDOW_DAYS = 30;

/** A hash of the trace number (and span index) with a salt per attribute. */
const h = (salt: number, j?: string) => (j === undefined ? `cityHash64(n, ${salt})` : `cityHash64(n, ${j}, ${salt})`);
const pick = (param: string, salt: number, size: number) => `{${param}:Array(String)}[1 + ${h(salt)} % ${size}]`;
const slice = (j: string, salt: number) =>
  `substring({prose:String}, 1 + ${h(salt, j)} % ${PROSE.length - TEXT_MIN - TEXT_SPREAD}, ${TEXT_MIN} + ${h(salt + 1, j)} % ${TEXT_SPREAD})`;

/**
 * Span inputs carry words of known rarity for full-text search (bench/analytics.ts): the tool span
 * (j = 4) of trace n names `order<n % ORDER_WORDS>` (about 100 traces each at scale 1) and
 * `sku<n % SKU_WORDS>` (about 10,000), where the prose alone would match every span.
 */
export const ORDER_WORDS = 100_003;
export const SKU_WORDS = 1_009;
const spanInput = (j: string) =>
  `if(${j} = 4, concat(${slice(j, 11)}, ' order', toString(n % ${ORDER_WORDS}), ' sku', toString(n % ${SKU_WORDS})), ${slice(j, 11)})`;

// Trace-level attributes.
const LATENCY = `(100 + toUInt64(pow((${h(2)} % 10000) / 10000, 3) * 30000))`; // 100..30,100 ms, median ~3.9 s
const ZERO_TOKENS = `(${h(3)} % 100 < ${ZERO_TOKEN_PERCENT})`;
const MODEL_INDEX = `(${h(1)} % ${MODELS.length})`;
const FAILED = `(${h(6)} % 100 < ${FAILURE_PERCENT})`;
const FAILURE_INDEX = `(1 + ${h(7)} % ${FAILURE_TYPES.length})`;
const STARTED_AT = `({base:DateTime64(3)} + toIntervalMillisecond(toUInt64(n * {step_ms:Float64})))`;

// Span-level attributes of span j of trace n.
const spanType = (j: string) => `{span_types:Array(String)}[1 + ${j}]`;
const promptTokens = (j: string) => `if(${spanType(j)} = 'llm' AND NOT ${ZERO_TOKENS}, 50 + ${h(4, j)} % 2000, 0)`;
const completionTokens = (j: string) => `if(${spanType(j)} = 'llm' AND NOT ${ZERO_TOKENS}, 10 + ${h(5, j)} % 500, 0)`;
const spanCost = (j: string) =>
  `(${promptTokens(j)} * {input_price:Array(Float64)}[1 + ${MODEL_INDEX}] + ${completionTokens(j)} * {output_price:Array(Float64)}[1 + ${MODEL_INDEX}])`;
const overSpans = (expr: (j: string) => string) => `arraySum(arrayMap(j -> ${expr('j')}, range(${SPANS_PER_TRACE})))`;

const TRACES_SQL = `
INSERT INTO traces (tenant_id, project_id, id, started_at, ended_at, name, input, output, session_id, external_id,
  model, tags, tag_map, tag_pairs, metadata, error, failure_types, latency_ms, cost, prompt_tokens_total,
  completion_tokens_total, total_token_count, span_count, version)
SELECT {tenant:UUID}, {project:UUID}, reinterpretAsUUID(sipHash128('trace', n)),
  ${STARTED_AT} AS started, started + toIntervalMillisecond(${LATENCY}),
  ${pick('trace_names', 15, TRACE_NAMES.length)}, ${slice('99', 11)}, ${slice('99', 13)},
  concat('session-', toString(n % 100003)), concat('ext-', toString(n)),
  {models:Array(String)}[1 + ${MODEL_INDEX}],
  [concat('customer:c', toString(${h(8)} % ${CUSTOMERS})), concat('env:', ${pick('envs', 9, ENVS.length)})] AS tag_list,
  map('region', ${pick('regions', 10, REGIONS.length)}) AS tag_object,
  arrayConcat(arrayMap(t -> replaceOne(t, ':', {sep:String}), tag_list), [concat('region', {sep:String}, tag_object['region'])]),
  concat('{"user_id":"u-', toString(n % 50021), '"}'),
  if(${FAILED}, {failure_errors:Array(String)}[${FAILURE_INDEX}], NULL),
  if(${FAILED}, [{failure_types:Array(String)}[${FAILURE_INDEX}]], []),
  ${LATENCY}, ${overSpans(spanCost)}, ${overSpans(promptTokens)} AS prompt, ${overSpans(completionTokens)} AS completion,
  prompt + completion, ${SPANS_PER_TRACE}, 1
FROM (SELECT number + {from:UInt64} AS n FROM numbers({count:UInt64}))`;

const SPANS_SQL = `
INSERT INTO spans (tenant_id, project_id, trace_id, span_id, parent_span_id, name, type, input, output, model,
  start_time, end_time, latency_ms, prompt_tokens, completion_tokens, cost, error, failure_type, status_code,
  metadata, otel_trace_id, otel_span_id, embedding, created_at, version)
SELECT {tenant:UUID}, {project:UUID}, reinterpretAsUUID(sipHash128('trace', n)), reinterpretAsUUID(sipHash128('span', n, j)),
  if(j = 0, NULL, reinterpretAsUUID(sipHash128('span', n, 0))),
  concat(${spanType('j')}, '-', toString(j)), ${spanType('j')}, ${spanInput('j')}, ${slice('j', 13)},
  if(${spanType('j')} = 'llm', {models:Array(String)}[1 + ${MODEL_INDEX}], ''),
  toDateTime64(${STARTED_AT}, 9) + toIntervalMillisecond(intDiv(${LATENCY} * j, ${SPANS_PER_TRACE})) AS start,
  start + toIntervalMillisecond(intDiv(${LATENCY}, ${SPANS_PER_TRACE})), intDiv(${LATENCY}, ${SPANS_PER_TRACE}),
  ${promptTokens('j')}, ${completionTokens('j')}, ${spanCost('j')},
  if(${FAILED} AND j = 1, {failure_errors:Array(String)}[${FAILURE_INDEX}], NULL),
  if(${FAILED} AND j = 1, {failure_types:Array(String)}[${FAILURE_INDEX}], ''),
  if(${FAILED} AND j = 1, 500, 200), '{}', '', '', [], toDateTime64(${STARTED_AT}, 3), 1
FROM (SELECT {from:UInt64} + intDiv(number, ${SPANS_PER_TRACE}) AS n, number % ${SPANS_PER_TRACE} AS j
      FROM numbers({count:UInt64} * ${SPANS_PER_TRACE}))`;

export interface GenerateOptions {
  tenantId: string;
  projectId: string;
  traces: number;
  /** The newest trace starts at `endMs`; the oldest WINDOW_DAYS before. */
  endMs: number;
  chunkTraces: number;
  onChunk?: (done: number, total: number) => void;
}

/** Inserts `traces` traces and 10 spans each, in chunks so the engine's memory stays bounded. */
export async function generateDataset(ch: ClickHouseStore, o: GenerateOptions): Promise<{ tracesMs: number; spansMs: number; tokensMs: number }> {
  const windowMs = WINDOW_DAYS * 86_400_000;
  const params = {
    tenant: o.tenantId,
    project: o.projectId,
    base: millisToClickHouse(o.endMs - windowMs),
    step_ms: windowMs / o.traces,
    sep: TAG_PAIR_SEPARATOR,
    prose: PROSE,
    models: [...MODELS],
    input_price: MODELS.map((m) => findPrice(m, new Map())?.inputPerToken ?? 0),
    output_price: MODELS.map((m) => findPrice(m, new Map())?.outputPerToken ?? 0),
    trace_names: [...TRACE_NAMES],
    span_types: [...SPAN_TYPES],
    envs: [...ENVS],
    regions: [...REGIONS],
    failure_types: [...FAILURE_TYPES],
    failure_errors: FAILURE_TYPES.map((t) => FAILURE_ERRORS[t]),
  };
  const timings = { tracesMs: 0, spansMs: 0 };
  for (let from = 0; from < o.traces; from += o.chunkTraces) {
    const count = Math.min(o.chunkTraces, o.traces - from);
    for (const [sql, key] of [
      [SPANS_SQL, 'spansMs'],
      [TRACES_SQL, 'tracesMs'],
    ] as const) {
      const start = performance.now();
      await ch.command(`bench.generate.${key}`, sql, { ...params, from, count });
      timings[key] += performance.now() - start;
    }
    o.onChunk?.(from + count, o.traces);
  }
  const start = performance.now();
  await fillTraceTokens(ch);
  return { ...timings, tokensMs: performance.now() - start };
}

/**
 * The search's token rows of the generated traces (trace_tokens), made as ingest's migration makes
 * them for traces stored before it: its own statements, run again now that the traces are here.
 */
async function fillTraceTokens(ch: ClickHouseStore): Promise<void> {
  const migration = readFileSync(new URL('../../clickhouse/009_trace_tokens.sql', import.meta.url), 'utf8');
  for (const statement of splitStatements(renderClickHouseDdl(migration, ch.cluster))) {
    if (/^(TRUNCATE|INSERT)\b/.test(statement)) await ch.command('bench.generate.tokens', statement);
  }
}

/**
 * Waits until the engine has no merge running on the dataset's tables (two quiet polls in a row),
 * so that the benches that follow do not share the CPU with the merges the inserts started.
 */
export async function waitForMerges(ch: ClickHouseStore, maxSeconds: number): Promise<{ seconds: number; settled: boolean }> {
  const start = performance.now();
  let quiet = 0;
  while ((performance.now() - start) / 1000 < maxSeconds) {
    const [row] = await ch.rows<{ n: string }>(
      'bench.generate.merges',
      `SELECT count() AS n FROM system.merges WHERE database = currentDatabase() AND table IN ('traces', 'spans')`,
    );
    quiet = Number(row!.n) === 0 ? quiet + 1 : 0;
    if (quiet >= 2) return { seconds: (performance.now() - start) / 1000, settled: true };
    await new Promise((r) => setTimeout(r, 2_000));
  }
  return { seconds: (performance.now() - start) / 1000, settled: false };
}

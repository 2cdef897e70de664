/**
 * The raw baseline of the export bench: the export's rows as one plain ClickHouse query with
 * FORMAT CSVWithNames, streamed straight from the engine and only counted. Same columns (the
 * export's own list), same expressions, same filter (the traces module's own TraceFilter), same
 * FINAL reads and the same order as GET /v1/traces/export, but one query instead of pages.
 */
import path from 'node:path';
import { drainPending, Session } from 'chdb';
import { loadConfig } from '../../src/config.js';
import { EXPORT_COLUMNS } from '../../src/modules/traces/export-repo.js';
import { PARQUET_SETTINGS } from '../../src/stores/clickhouse-parquet.js';
import { TraceFilter } from '../../src/modules/traces/filters.js';
import { bind } from '../../src/stores/clickhouse-where.js';
import { openClickHouse } from './clickhouse.js';
import { benchStores, looptraceEnv } from './env.js';

export interface Window {
  from: string;
  to: string;
}

/** The export's expression for each of its columns; the column list and order are the export's own. */
const EXPRESSIONS: Record<(typeof EXPORT_COLUMNS)[number], string> = {
  trace_id: 's.trace_id',
  span_id: 's.span_id',
  name: 's.name',
  type: 's.type',
  model: 's.model',
  created_at: "concat(replaceOne(toString(s.created_at), ' ', 'T'), 'Z')",
  duration_ms: 's.latency_ms',
  prompt_tokens: 's.prompt_tokens',
  completion_tokens: 's.completion_tokens',
  cost_usd: 's.cost',
  trace_input: 't.input',
  trace_output: 't.output',
  span_input: 's.input',
  span_output: 's.output',
  error: "ifNull(s.error, '')",
};

/** Parquet keeps created_at's DateTime64 and a null for no error, as the export's Parquet does (export-repo.ts). */
const PARQUET_EXPRESSIONS: Partial<Record<(typeof EXPORT_COLUMNS)[number], string>> = { created_at: 's.created_at', error: "nullIf(s.error, '')" };

export type RawFormat = 'csv' | 'parquet';

function exportSql(database: string, tenantId: string, projectId: string, window: Window, format: RawFormat) {
  const traces = TraceFilter.fromQuery(tenantId, window).where();
  const spans = traces.sibling().and`project_id = ${bind('UUID', projectId)}`;
  const sql = `
    SELECT ${EXPORT_COLUMNS.map((c) => `${(format === 'parquet' ? PARQUET_EXPRESSIONS[c] : undefined) ?? EXPRESSIONS[c]} AS ${c}`).join(', ')}
    FROM (
      SELECT * FROM ${database}.spans FINAL
      WHERE ${spans.sql} AND trace_id IN (SELECT id FROM ${database}.traces WHERE ${traces.sql})
    ) AS s
    INNER JOIN (SELECT id, started_at, input, output FROM ${database}.traces FINAL WHERE ${traces.sql}) AS t ON t.id = s.trace_id
    ORDER BY s.trace_id, s.start_time, s.span_id`;
  return { sql, params: traces.params };
}

/** The row count in a Parquet file's footer (the file's tail is enough: the footer is last). */
export async function parquetRows(tail: Uint8Array): Promise<number | undefined> {
  const { parquetMetadata } = await import('hyparquet');
  try {
    const bytes = tail.buffer.slice(tail.byteOffset, tail.byteOffset + tail.byteLength) as ArrayBuffer;
    return Number(parquetMetadata(bytes).num_rows);
  } catch {
    return undefined;
  }
}

export interface RawExport {
  rows: number;
  bytes: number;
  seconds: number;
}

const NEWLINE = 0x0a;
const countLines = (chunk: Uint8Array) => {
  let n = 0;
  for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, i + 1)) n += 1;
  return n;
};

/** Opens the dataset's engine in this process (the server must be stopped) for a series of raw exports. */
export async function rawExporter(dataDir: string, tenantId: string, projectId: string) {
  const database = loadConfig(looptraceEnv(dataDir)).clickhouse.database;
  const server = benchStores().clickhouseUrl;
  // Embedded: chDB's own streaming query (the @clickhouse/client adapter buffers whole results).
  // The engine's directory is <data dir>/clickhouse, as src/stores/clickhouse.ts opens it.
  const session = server ? undefined : new Session(path.join(dataDir, 'clickhouse'));
  const ch = server ? await openClickHouse(dataDir) : undefined;

  async function run(window: Window, format: RawFormat = 'csv'): Promise<RawExport> {
    const { sql, params } = exportSql(database, tenantId, projectId, window, format);
    if (format === 'parquet') return parquet(sql, params);
    // FORMAT CSV plus one header line, as CSVWithNames would write it: chDB's stream repeats
    // CSVWithNames' header in every chunk.
    let rows = 0;
    let bytes = Buffer.byteLength(EXPORT_COLUMNS.map((c) => `"${c}"`).join(',') + '\n');
    const start = performance.now();
    if (session) {
      for await (const chunk of session.queryStreamBind(sql, params, { format: 'CSV' })) {
        const raw = chunk.raw();
        rows += countLines(raw);
        bytes += raw.byteLength;
      }
    } else {
      const result = await ch!.client.query({ query: sql, query_params: params, format: 'CSV' });
      for await (const batch of result.stream()) {
        for (const row of batch) {
          rows += 1;
          bytes += Buffer.byteLength(row.text) + 1;
        }
      }
    }
    return { rows, bytes, seconds: (performance.now() - start) / 1000 };
  }

  /** FORMAT Parquet straight from the engine: a file per block embedded (rows from each chunk), one file over HTTP. */
  async function parquet(sql: string, params: Record<string, unknown>): Promise<RawExport> {
    let rows = 0;
    let bytes = 0;
    const start = performance.now();
    if (session) {
      for await (const chunk of session.queryStreamBind(`${sql} SETTINGS ${PARQUET_SETTINGS}`, params, { format: 'Parquet' })) {
        rows += chunk.numRows;
        bytes += chunk.raw().byteLength;
      }
    } else {
      for await (const chunk of ch!.stream(`${sql} SETTINGS ${PARQUET_SETTINGS}`, params, 'Parquet')) {
        rows += (await parquetRows(chunk.data)) ?? 0;
        bytes += chunk.data.byteLength;
      }
    }
    return { rows, bytes, seconds: (performance.now() - start) / 1000 };
  }

  /** Reads every column of the tenant's rows once, so neither side of the comparison starts cold. */
  async function warm(): Promise<void> {
    for (const table of ['traces', 'spans']) {
      const sql = `SELECT sum(length(input) + length(output) + length(name)) FROM ${database}.${table} WHERE tenant_id = {t:UUID} FORMAT Null`;
      if (session) await session.queryBindAsync(sql, { t: tenantId });
      else await ch!.command('bench.warm', sql, { t: tenantId });
    }
  }

  return {
    run,
    warm,
    async close() {
      session?.close();
      await ch?.closeFully();
      await drainPending();
    },
  };
}

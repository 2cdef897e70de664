import { PARQUET_SETTINGS } from '../../stores/clickhouse-parquet.js';
import type { ResultChunk } from '../../stores/clickhouse-stream.js';
import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { tenantTableFilters, tenantViews } from './tenant-views.js';

export interface SqlLimits {
  maxExecutionSeconds: number;
  maxRowsToRead: number;
  maxResultBytes: number;
  maxMemoryBytes: number;
}

export interface DatabaseTable {
  name: string;
  tenantScoped: boolean;
}

/** JSONCompact: the answer's columns, rows and the engine's own statistics. */
export interface CompactResult {
  meta: { name: string; type: string }[];
  data: unknown[][];
  rows: number;
  statistics?: { elapsed: number; rows_read: number; bytes_read: number };
}

export type SqlStreamFormat = 'CSVWithNames' | 'Parquet';

export function sqlRepository(ch: ClickHouseStore) {
  const { database } = ch;

  /** The tenant's query inside its views, cut at `rowLimit` rows, under the limits and filters. */
  const wrap = (tenantId: string, query: string, rowLimit: number, limits: SqlLimits, tables: readonly DatabaseTable[], extra = '') =>
    `${tenantViews(database, tenantId)}
SELECT * FROM (
${query}
) LIMIT ${rowLimit}
SETTINGS max_execution_time = ${limits.maxExecutionSeconds}, timeout_overflow_mode = 'throw',
  max_rows_to_read = ${limits.maxRowsToRead}, read_overflow_mode = 'throw',
  max_result_bytes = ${limits.maxResultBytes}, result_overflow_mode = 'throw', max_memory_usage = ${limits.maxMemoryBytes},
  output_format_json_quote_64bit_integers = 0, date_time_output_format = 'iso', output_format_write_statistics = 1,
  additional_table_filters = ${tenantTableFilters(database, tenantId, tables)}${extra}, readonly = 1`;

  return {
    /** ClickHouse's parse of the text: nothing is executed, nothing is read. */
    async explainAst(query: string): Promise<string> {
      const lines = (await ch.text('sql.explain_ast', `EXPLAIN AST ${query}`, 'TabSeparatedRaw')).trimEnd().split('\n');
      // Over HTTP the client ends the query with `FORMAT TabSeparatedRaw`: that clause is the client's, not the tenant's.
      if (lines.length > 1 && lines.at(-1) === ' Identifier TabSeparatedRaw') {
        lines.pop();
        lines[0] = lines[0]!.replace(/\(children (\d+)\)/, (_, n: string) => `(children ${Number(n) - 1})`);
      }
      return lines.join('\n');
    },

    /** The service's tables (names it controls), and whether each has a tenant_id column. */
    async tables(): Promise<DatabaseTable[]> {
      const rows = await ch.rows<{ table: string; tenant_scoped: number }>(
        'sql.tables',
        `SELECT table, max(name = 'tenant_id') AS tenant_scoped FROM system.columns WHERE database = {database:String} GROUP BY table`,
        { database },
      );
      return rows.filter((r) => /^[\w.]+$/.test(r.table)).map((r) => ({ name: r.table, tenantScoped: Number(r.tenant_scoped) === 1 }));
    },

    async json(tenantId: string, query: string, rowLimit: number, limits: SqlLimits, tables: readonly DatabaseTable[]): Promise<CompactResult> {
      const text = await ch.text('sql.query', wrap(tenantId, query, rowLimit, limits, tables), 'JSONCompact');
      return JSON.parse(text) as CompactResult;
    },

    stream(tenantId: string, query: string, rowLimit: number, limits: SqlLimits, tables: readonly DatabaseTable[], format: SqlStreamFormat): AsyncIterable<ResultChunk> {
      const extra = format === 'Parquet' ? `, ${PARQUET_SETTINGS}` : '';
      return ch.stream(wrap(tenantId, query, rowLimit, limits, tables, extra), {}, format);
    },
  };
}

export type SqlRepository = ReturnType<typeof sqlRepository>;

import type { ClickHouseStore } from './clickhouse.js';

/**
 * Settings of every Parquet file the service writes. Snappy: every Parquet reader has it, and it is
 * the cheapest to write. No page index: its page offsets live among the column data, where
 * parquet-concat.ts would have to rewrite them when it joins parts into one file (the footer's
 * offsets it does move); readers do without it.
 */
export const PARQUET_SETTINGS = "output_format_parquet_compression_method = 'snappy', output_format_parquet_write_page_index = 0";

/**
 * Rows held elsewhere (Postgres) written as Parquet by ClickHouse: the same writer, types and
 * encodings as the trace export, and no second Parquet implementation in the service.
 * `structure` is ClickHouse's column list (`name Type, …`, a constant of the caller's); the rows
 * go in as JSONEachRow, so their values must be what that input format parses for each type.
 */
export type ParquetOfRows = (structure: string, rows: readonly object[]) => AsyncIterable<Buffer>;

export function clickHouseParquet(ch: ClickHouseStore): ParquetOfRows {
  return async function* (structure, rows) {
    // The format table function wants at least one row to know its columns; for none, one row of
    // defaults that LIMIT 0 drops still brings the schema, so no rows is a valid, empty file.
    const data = rows.length === 0 ? '{}\n' : rows.map((r) => `${JSON.stringify(r)}\n`).join('');
    const query = `
      SELECT * FROM format(JSONEachRow, '${structure.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}', {rows:String})
      LIMIT {limit:UInt64}
      SETTINGS date_time_input_format = 'best_effort', ${PARQUET_SETTINGS}`;
    for await (const chunk of ch.stream(query, { rows: data, limit: rows.length }, 'Parquet')) yield chunk.data;
  };
}

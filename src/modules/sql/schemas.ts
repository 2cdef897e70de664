import { z } from 'zod';
import { SQL_MAX_QUERY_LENGTH, SQL_TABLES } from './guard.js';

export const SQL_FORMATS = ['json', 'csv', 'parquet'] as const;
export type SqlFormat = (typeof SQL_FORMATS)[number];

export const sqlBody = z
  .object({
    query: z
      .string()
      .min(1)
      .describe(
        `one SELECT over the tables ${SQL_TABLES.join(', ')} (docs/sql.md lists their columns); a trailing ';' is allowed; ` +
          `at most ${SQL_MAX_QUERY_LENGTH.toLocaleString('en')} characters (else 400 sql.query_too_long)`,
      ),
    format: z.enum(SQL_FORMATS).default('json').describe('json (default): the answer below; csv: text/csv with a header row; parquet: application/vnd.apache.parquet'),
  })
  .strict();
export type SqlBody = z.infer<typeof sqlBody>;

export const sqlResult = z
  .object({
    columns: z.array(z.object({ name: z.string(), type: z.string().describe('the ClickHouse type, e.g. String, UInt64, DateTime64(3, \'UTC\')') })),
    rows: z.array(z.array(z.unknown())).describe('one array per row, values in column order: numbers as numbers, timestamps as ISO 8601 text, Map and tuples as objects/arrays'),
    rows_read: z.number().int().describe('rows the engine read to answer (of the tenant\'s data)'),
    elapsed_ms: z.number().describe('time the engine spent'),
    truncated: z.boolean().describe('true when the result had more rows than the row limit and was cut there'),
  })
  .describe('SqlResult');
export type SqlResult = z.infer<typeof sqlResult>;

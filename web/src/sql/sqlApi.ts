import { api, unwrap } from '../api/client';
import type { paths } from '../api/schema';

type SqlOperation = paths['/v1/sql']['post'];
export type SqlResult = SqlOperation['responses'][200]['content']['application/json'];
export type SqlFileFormat = Exclude<NonNullable<SqlOperation['requestBody']['content']['application/json']['format']>, 'json'>;

/** POST /v1/sql: the query's answer as JSON (columns with their types, rows, what it cost). */
export const runSql = (query: string): Promise<SqlResult> => unwrap(api.POST('/v1/sql', { body: { query, format: 'json' } }));

/** POST /v1/sql as a file (CSV or Parquet): the same query, up to the file row limit rather than the JSON one. */
export const fetchSqlFile = (query: string, format: SqlFileFormat): Promise<Blob> =>
  unwrap(api.POST('/v1/sql', { body: { query, format }, parseAs: 'blob' }));

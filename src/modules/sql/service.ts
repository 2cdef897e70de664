import { Readable } from 'node:stream';
import type { Redis } from 'ioredis';
import { AppError, badRequest } from '../../platform/errors.js';
import type { ResultChunk } from '../../stores/clickhouse-stream.js';
import { joinParquet } from '../../stores/parquet-concat.js';
import { checkQueryAst, checkQueryText, SQL_TABLES } from './guard.js';
import type { DatabaseTable, SqlLimits, SqlRepository } from './repo.js';
import type { SqlBody, SqlResult } from './schemas.js';

/** Bounds of every tenant query (docs/sql.md). Rows: JSON answers are read whole, files are streamed. */
export const SQL_LIMITS: SqlLimits = {
  maxExecutionSeconds: 10,
  maxRowsToRead: 100_000_000,
  maxResultBytes: 256 * 1024 * 1024,
  maxMemoryBytes: 2 * 1024 * 1024 * 1024,
};
export const SQL_MAX_JSON_ROWS = 10_000;
export const SQL_MAX_FILE_ROWS = 1_000_000;
/** Queries of one tenant running at once, across every instance of the service. */
export const SQL_MAX_CONCURRENT = 2;

const TABLES_TTL_MS = 60_000;

export type SqlAnswer = { kind: 'json'; result: SqlResult; rows: number } | { kind: 'file'; body: Readable };

/**
 * A tenant's read-only SQL. In order: the text is checked (guard.checkQueryText), parsed by
 * ClickHouse and the parse checked (guard.checkQueryAst), then run inside the tenant's views with
 * every table filtered to the tenant and the engine's limits set (repo.ts). The engine's refusals
 * (limits, unknown columns, type errors) come back as 400s naming the cause.
 */
export class SqlService {
  private tableCache: { tables: DatabaseTable[]; others: Set<string>; until: number } | undefined;

  constructor(
    private readonly repo: SqlRepository,
    private readonly redis: Redis,
    private readonly redisPrefix: string,
  ) {}

  async run(tenantId: string, body: SqlBody): Promise<SqlAnswer> {
    const query = checkQueryText(body.query);
    const { tables, others } = await this.tables();
    checkQueryAst(await engineCall(() => this.repo.explainAst(query)), others);
    const release = await this.acquireSlot(tenantId);
    if (body.format === 'json') {
      try {
        return await this.json(tenantId, query, tables);
      } finally {
        await release();
      }
    }
    const format = body.format === 'csv' ? 'CSVWithNames' : 'Parquet';
    const chunks = this.repo.stream(tenantId, query, SQL_MAX_FILE_ROWS, SQL_LIMITS, tables, format)[Symbol.asyncIterator]();
    let first: IteratorResult<ResultChunk>;
    try {
      // The first chunk is awaited here, so a query the engine refuses is an ordinary 400.
      first = await engineCall(() => chunks.next());
    } catch (err) {
      await release();
      throw err;
    }
    // From here the stream holds the slot until it ends.
    const bytes = streamed(first, chunks, release);
    // chDB streams no block for an empty result: the same query with LIMIT 0 brings the Parquet schema.
    const noRows = () => this.repo.stream(tenantId, `SELECT * FROM (${query}\n) LIMIT 0`, 0, SQL_LIMITS, tables, 'Parquet');
    const file = format === 'Parquet' ? joinParquet(bytes, noRows) : dataOf(bytes);
    return { kind: 'file', body: Readable.from(file, { objectMode: false }) };
  }

  private async json(tenantId: string, query: string, tables: readonly DatabaseTable[]): Promise<SqlAnswer> {
    const answer = await engineCall(() => this.repo.json(tenantId, query, SQL_MAX_JSON_ROWS + 1, SQL_LIMITS, tables));
    const truncated = answer.data.length > SQL_MAX_JSON_ROWS;
    const rows = truncated ? answer.data.slice(0, SQL_MAX_JSON_ROWS) : answer.data;
    const result: SqlResult = {
      columns: answer.meta.map(({ name, type }) => ({ name, type })),
      rows,
      rows_read: answer.statistics?.rows_read ?? 0,
      elapsed_ms: Math.round((answer.statistics?.elapsed ?? 0) * 1e6) / 1e3,
      truncated,
    };
    return { kind: 'json', result, rows: rows.length };
  }

  private async tables(): Promise<{ tables: DatabaseTable[]; others: Set<string> }> {
    if (this.tableCache && this.tableCache.until > Date.now()) return this.tableCache;
    const tables = await this.repo.tables();
    const allowed = new Set<string>(SQL_TABLES);
    this.tableCache = { tables, others: new Set(tables.map((t) => t.name).filter((name) => !allowed.has(name))), until: Date.now() + TABLES_TTL_MS };
    return this.tableCache;
  }

  /**
   * One of the tenant's SQL_MAX_CONCURRENT slots, counted in Redis so every instance sees them. The
   * key expires a while after the longest a query may run, so a crashed instance frees its slots.
   */
  private async acquireSlot(tenantId: string): Promise<() => Promise<void>> {
    const key = `${this.redisPrefix}:sql:running:${tenantId}`;
    const [[, count]] = (await this.redis.multi().incr(key).pexpire(key, SQL_LIMITS.maxExecutionSeconds * 1000 * 6).exec()) as [[unknown, number]];
    const release = async () => {
      await this.redis.decr(key);
    };
    if (count > SQL_MAX_CONCURRENT) {
      await release();
      throw new AppError(429, 'sql.too_many_queries', `at most ${SQL_MAX_CONCURRENT} SQL queries of a tenant run at once; retry when one has finished`, {}, { 'retry-after': '1' });
    }
    return release;
  }
}

/** The stream's chunks, the first already read; the slot is released however the stream ends. */
async function* streamed(first: IteratorResult<ResultChunk>, rest: AsyncIterator<ResultChunk>, release: () => Promise<void>): AsyncGenerator<ResultChunk> {
  try {
    if (first.done) return;
    yield first.value;
    for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
  } finally {
    await rest.return?.();
    await release();
  }
}

async function* dataOf(chunks: AsyncIterable<ResultChunk>): AsyncGenerator<Buffer> {
  for await (const chunk of chunks) yield chunk.data;
}

// The engine's verdicts on a query: its limits, and what the query itself got wrong.
const LIMIT_CODES = new Set([158, 159, 160, 241, 307, 396]);
const QUERY_CODES = new Set([
  6, 27, 32, 167, 168, 306, 35, 36, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 53, 57, 60, 62, 69, 70, 72, 80, 81, 113, 117, 125, 130, 131, 153, 164, 166, 169, 179,
  183, 184, 190, 191, 215, 258, 352, 386, 395, 403, 407, 416, 452, 456, 497, 573, 640,
]);

/** Runs an engine call, turning the errors that describe the query (not the engine) into 400s. */
async function engineCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const code = engineErrorCode(err);
    if (code === undefined) throw err;
    const message = cleanMessage((err as Error).message);
    if (LIMIT_CODES.has(code)) throw badRequest('sql.limit_exceeded', `the query went past a limit: ${message}`, { engine_code: code });
    if (QUERY_CODES.has(code)) throw badRequest('sql.invalid_query', message, { engine_code: code });
    throw err;
  }
}

function engineErrorCode(err: unknown): number | undefined {
  if (!(err instanceof Error)) return undefined;
  const own = (err as { code?: unknown }).code;
  if (typeof own === 'string' && /^\d+$/.test(own)) return Number(own);
  const match = /Code: (\d+)\./.exec(err.message);
  if (match) return Number(match[1]);
  return /Syntax error/.test(err.message) ? 62 : undefined;
}

/** The engine's sentence without its version, stack or the service's wrapping of the query. */
function cleanMessage(message: string): string {
  return message
    .replace(/^Query failed: /, '')
    .replace(/Code: \d+\. DB::Exception: /g, '')
    .replace(/\s*\(version [^)]*\)\.?/g, '')
    .replace(/ In scope WITH traces AS[\s\S]*$/i, '')
    .split('\n')[0]!
    .slice(0, 500)
    .trim();
}

import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { bind, queryTag } from '../../stores/clickhouse-where.js';
import { JSON_NUMBERS } from '../../stores/clickhouse.js';
import type { TenantTraceFilter } from '../traces/types.js';

/** A session's totals as ClickHouse returns them (aliases differ from column names on purpose). */
export interface StoredSession {
  session_id: string;
  n_traces: number;
  n_spans: number;
  cost_total: number;
  prompt_total: number;
  completion_total: number;
  tokens_total: number;
  first_start: string;
  last_end: string;
  n_errors: number;
}

/** Keyset position in the sessions list: last activity desc, session id desc. */
export interface SessionPosition {
  lastEnd: string;
  sessionId: string;
}

const DATETIME = "DateTime64(3, 'UTC')";

// Aliases must not reuse the names of aggregated columns: `sum(span_count) AS span_count` would
// make the alias shadow the column inside its own aggregate.
const SESSION_TOTALS = `
  session_id,
  count() AS n_traces,
  sum(span_count) AS n_spans,
  sum(cost) AS cost_total,
  sum(prompt_tokens_total) AS prompt_total,
  sum(completion_tokens_total) AS completion_total,
  sum(total_token_count) AS tokens_total,
  min(started_at) AS first_start,
  max(ended_at) AS last_end,
  countIf(error IS NOT NULL AND error != '') AS n_errors`;

/**
 * Sessions are traces grouped by session_id; there is no sessions table. The filter's time window
 * bounds how many traces each aggregation reads; FINAL keeps superseded trace versions out of the
 * totals.
 */
export function sessionRepository(ch: ClickHouseStore) {
  const settings = (name: string, tenantId: string) => ({ ...queryTag(name, tenantId), ...JSON_NUMBERS });

  return {
    async list(filter: TenantTraceFilter, after: SessionPosition | null, limit: number): Promise<StoredSession[]> {
      const where = filter.where().and`session_id != ''`;
      const having = after
        ? `HAVING ${where.fragment`last_end < ${bind(DATETIME, after.lastEnd)} OR (last_end = ${bind(DATETIME, after.lastEnd)} AND session_id < ${bind('String', after.sessionId)})`}`
        : '';
      const max = where.fragment`${bind('UInt32', limit)}`;
      return ch.rows<StoredSession>(
        'sessions.list',
        `SELECT ${SESSION_TOTALS} FROM traces FINAL WHERE ${where.sql} AND is_deleted = 0
         GROUP BY session_id ${having}
         ORDER BY last_end DESC, session_id DESC LIMIT ${max}`,
        where.params,
        settings('sessions.list', filter.tenantId),
      );
    },

    /** Totals of one session; `filter` carries the session id and the window. */
    async summary(filter: TenantTraceFilter): Promise<StoredSession | undefined> {
      const where = filter.where();
      const [row] = await ch.rows<StoredSession>(
        'sessions.get',
        `SELECT ${SESSION_TOTALS} FROM traces FINAL WHERE ${where.sql} AND is_deleted = 0 GROUP BY session_id`,
        where.params,
        settings('sessions.get', filter.tenantId),
      );
      return row;
    },
  };
}

export type SessionRepository = ReturnType<typeof sessionRepository>;

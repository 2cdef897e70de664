import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { expiringTable } from '../../stores/clickhouse-expiry.js';
import { bind, TenantWhere } from '../../stores/clickhouse-where.js';
import { millisToClickHouse } from '../../platform/time.js';

const DATETIME = "DateTime64(3, 'UTC')";

/** A project's rows of `traces` or `spans` whose start is before the cutoff (the tables' partition column). */
const startedBefore = (column: 'start_time' | 'started_at') => (tenantId: string, projectId: string, cutoffMs: number) => {
  const where = TenantWhere.forTenant(tenantId).and`project_id = ${bind('UUID', projectId)}`;
  // The column is one of two names from code; the cutoff is a bound value.
  return column === 'start_time'
    ? where.and`start_time < ${bind(DATETIME, millisToClickHouse(cutoffMs))}`
    : where.and`started_at < ${bind(DATETIME, millisToClickHouse(cutoffMs))}`;
};

/** Retention of the trace store (clickhouse/001_traces.sql, 009_trace_tokens.sql): every table is partitioned by month of start. */
export function traceRetentionRepository(ch: ClickHouseStore) {
  return {
    spans: expiringTable(ch, { table: 'spans', name: 'traces.retention_spans', monthly: true, expired: startedBefore('start_time') }),
    traces: expiringTable(ch, { table: 'traces', name: 'traces.retention_traces', monthly: true, expired: startedBefore('started_at') }),
    tokens: expiringTable(ch, { table: 'trace_tokens', name: 'traces.retention_tokens', monthly: true, expired: startedBefore('started_at') }),
  };
}

export type TraceRetentionRepository = ReturnType<typeof traceRetentionRepository>;

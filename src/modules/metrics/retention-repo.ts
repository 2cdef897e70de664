import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { expiringTable } from '../../stores/clickhouse-expiry.js';
import { bind, TenantWhere } from '../../stores/clickhouse-where.js';
import { millisToClickHouse } from '../../platform/time.js';

/** project_id of the per-tenant marker rows of each recomputation (repo.ts): shared by the tenant's projects. */
const MARKER_PROJECT = '00000000-0000-0000-0000-000000000000';

/** Retention of the per-minute rollup (clickhouse/002_trace_metrics.sql, partitioned by month of `minute`). */
export function metricsRetentionRepository(ch: ClickHouseStore) {
  return {
    /**
     * A project's rows of minutes before the cutoff, every version. Marker rows are never deleted
     * one project at a time (the tenant's other projects read through them) and never block a
     * partition drop: in a partition whose every project is expired they count nothing.
     */
    rollup: expiringTable(ch, {
      table: 'trace_metrics_1m',
      name: 'metrics.retention',
      monthly: true,
      ignoredProjects: [MARKER_PROJECT],
      expired: (tenantId, projectId, cutoffMs) =>
        TenantWhere.forTenant(tenantId)
          .and`project_id = ${bind('UUID', projectId)}`
          .and`minute < ${bind("DateTime64(3, 'UTC')", millisToClickHouse(cutoffMs))}`,
    }),
  };
}

export type MetricsRetentionRepository = ReturnType<typeof metricsRetentionRepository>;

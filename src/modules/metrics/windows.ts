import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { queryTag } from '../../stores/clickhouse-where.js';
import { JSON_NUMBERS } from '../../stores/clickhouse.js';
import { currentRollup, LATENCY_SKETCH_ACCURACY, toChDateTime } from './repo.js';

/** One project's traffic in one fixed window (anomaly detection reads these). */
export interface ProjectWindow {
  projectId: string;
  startMs: number;
  traces: number;
  errors: number;
  /** null when the window's latency sketch is empty. */
  latencyP95: number | null;
  /** USD summed over the window's traces. */
  cost: number;
  /** Prompt plus completion tokens summed over the window's traces. */
  tokens: number;
}

interface RawWindow {
  project_id: string;
  start_ms: number;
  traces: number;
  errors: number;
  tokens: number;
  cost: number;
  latency_p95: number | null;
}

/**
 * Fixed windows per project from the rollup: a window's p95 comes from its minutes' merged latency
 * sketches, never from their p95s, so this cannot be built from the minute series of GET /v1/metrics.
 * Read from the primary: the anomaly scan judges each window once and stores what it finds (and
 * fires webhooks), so a window must not be judged from a replica that has not caught up.
 */
export function metricsWindowRepository(ch: ClickHouseStore) {
  return {
    /** Tenants with traffic in [fromMs, toMs): a cross-tenant read that returns tenant ids only. */
    async activeTenants(fromMs: number, toMs: number): Promise<string[]> {
      const rows = await ch.rowsFromPrimary<{ tenant_id: string }>(
        'metrics.active_tenants',
        `SELECT DISTINCT tenant_id FROM trace_metrics_1m
         WHERE minute >= {from:DateTime('UTC')} AND minute < {to:DateTime('UTC')} AND trace_count > 0`,
        { from: toChDateTime(fromMs), to: toChDateTime(toMs) },
      );
      return rows.map((r) => r.tenant_id);
    },

    async projectWindows(tenantId: string, fromMs: number, toMs: number, windowMinutes: number): Promise<ProjectWindow[]> {
      const { where, params } = currentRollup({ tenantId, fromMs, toMs });
      const rows = await ch.rowsFromPrimary<RawWindow>(
        'metrics.project_windows',
        `SELECT project_id,
           toUnixTimestamp(toStartOfInterval(minute, INTERVAL {window:UInt32} MINUTE)) * 1000 AS start_ms,
           sum(trace_count) AS traces, sum(error_count) AS errors,
           sum(prompt_tokens) + sum(completion_tokens) AS tokens, sum(cost) AS cost,
           quantilesDDMerge(${LATENCY_SKETCH_ACCURACY}, 0.5, 0.95, 0.99)(latency_ms)[2] AS latency_p95
         FROM trace_metrics_1m
         WHERE ${where}
         GROUP BY project_id, start_ms
         ORDER BY project_id, start_ms`,
        { ...params, window: windowMinutes },
        { ...queryTag('metrics.project_windows', tenantId), ...JSON_NUMBERS },
      );
      return rows.map((r) => ({
        projectId: r.project_id,
        startMs: Number(r.start_ms),
        traces: Number(r.traces),
        errors: Number(r.errors),
        latencyP95: r.latency_p95 === null || !Number.isFinite(r.latency_p95) ? null : r.latency_p95,
        cost: r.cost,
        tokens: Number(r.tokens),
      }));
    },
  };
}

export type MetricsWindowRepository = ReturnType<typeof metricsWindowRepository>;

import type { ClickHouseStore } from '../../stores/clickhouse.js';

export const INTERVALS = ['minute', 'hour', 'day'] as const;
export type Interval = (typeof INTERVALS)[number];
export const GROUP_BYS = ['model', 'project', 'name'] as const;
export type GroupBy = (typeof GROUP_BYS)[number];

/** Relative accuracy of the latency sketch: an estimate is within 1% of the true quantile. */
export const LATENCY_SKETCH_ACCURACY = 0.01;
/** `quantilesDD<combinator>(accuracy, 0.5, 0.95, 0.99)`: p50, p95, p99 of the column's sketch. */
const sketch = (combinator: 'State' | 'StateIf' | 'Merge') => `quantilesDD${combinator}(${LATENCY_SKETCH_ACCURACY}, 0.5, 0.95, 0.99)`;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

// Identifiers come from these maps only, never from input.
const BUCKET_EXPR: Record<Interval, string> = {
  minute: 'minute',
  hour: 'toStartOfHour(minute)',
  day: 'toStartOfDay(minute)',
};
const GROUP_COLUMN: Record<GroupBy, { column: string; type: string }> = {
  model: { column: 'model', type: 'String' },
  project: { column: 'project_id', type: 'UUID' },
  name: { column: 'name', type: 'String' },
};

export const toChDateTime = (ms: number): string => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

export interface RollupScope {
  tenantId: string;
  fromMs: number;
  toMs: number;
  projectId?: string;
}

export interface MetricsRow {
  bucket_s: number;
  group: string | null;
  trace_count: number;
  error_count: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  latency_ms_sum: number;
  latency: [number | null, number | null, number | null];
}

/**
 * The rollup rows that count for a tenant and time range: only those of each minute's newest
 * recomputation (see clickhouse/002_trace_metrics.sql), without marker and zero rows. Every reader
 * of trace_metrics_1m goes through this filter; the WHERE starts with the tenant.
 */
export function currentRollup(scope: RollupScope): { where: string; params: Record<string, unknown> } {
  const range = 'tenant_id = {tenant:UUID} AND minute >= {from:DateTime(\'UTC\')} AND minute < {to:DateTime(\'UTC\')}';
  const project = scope.projectId ? ' AND project_id = {project:UUID}' : '';
  return {
    where: `${range}${project} AND trace_count > 0
      AND (minute, version) IN (SELECT minute, max(version) FROM trace_metrics_1m WHERE ${range} GROUP BY minute)`,
    params: {
      tenant: scope.tenantId,
      from: toChDateTime(scope.fromMs),
      to: toChDateTime(scope.toMs),
      ...(scope.projectId ? { project: scope.projectId } : {}),
    },
  };
}

interface RawMetricsRow {
  bucket_s: number;
  grp?: string;
  n_traces: string;
  n_errors: string;
  n_prompt: string;
  n_completion: string;
  cost_sum: number;
  latency_sum: string;
  latency: (number | null)[];
}

export function metricsRepository(ch: ClickHouseStore) {
  return {
    /**
     * Recomputes the rollup of these minutes of one tenant from `traces FINAL`, in one statement:
     * the current groups, zero rows for groups of earlier recomputations that no longer exist, and
     * one marker row per minute, all with one version. Idempotent: running it again writes the
     * same numbers under a newer version.
     */
    async recompute(tenantId: string, minutesMs: readonly number[]): Promise<void> {
      if (minutesMs.length === 0) return;
      const minutes = [...new Set(minutesMs)].sort((a, b) => a - b);
      const fresh = `
        SELECT tenant_id, project_id, toStartOfMinute(started_at) AS minute, model, name,
          count() AS n_traces,
          countIf(ifNull(error, '') != '') AS n_errors,
          sum(prompt_tokens_total) AS n_prompt,
          sum(completion_tokens_total) AS n_completion,
          sum(cost) AS cost_sum,
          sum(latency_ms) AS latency_sum,
          ${sketch('State')}(latency_ms) AS latency_sketch
        FROM traces FINAL
        WHERE tenant_id = {tenant:UUID} AND is_deleted = 0
          AND started_at >= {lo:DateTime('UTC')} AND started_at < {hi:DateTime('UTC')}
          AND toStartOfMinute(started_at) IN {minutes:Array(DateTime('UTC'))}
        GROUP BY tenant_id, project_id, minute, model, name`;
      const vanished = `
        SELECT tenant_id, project_id, minute, model, name, 0, 0, 0, 0, 0, 0,
          ${sketch('StateIf')}(toUInt64(0), 0)
        FROM trace_metrics_1m
        WHERE tenant_id = {tenant:UUID} AND minute IN {minutes:Array(DateTime('UTC'))} AND trace_count > 0
          AND (project_id, minute, model, name) NOT IN (
            SELECT project_id, toStartOfMinute(started_at), model, name FROM traces FINAL
            WHERE tenant_id = {tenant:UUID} AND is_deleted = 0
              AND started_at >= {lo:DateTime('UTC')} AND started_at < {hi:DateTime('UTC')}
              AND toStartOfMinute(started_at) IN {minutes:Array(DateTime('UTC'))})
        GROUP BY tenant_id, project_id, minute, model, name`;
      const markers = `
        SELECT {tenant:UUID}, toUUID('${NIL_UUID}'), m, '', '', 0, 0, 0, 0, 0, 0,
          arrayReduce('${sketch('State')}', emptyArrayUInt64())
        FROM (SELECT arrayJoin({minutes:Array(DateTime('UTC'))}) AS m)`;
      await ch.command(
        'metrics.recompute',
        `INSERT INTO trace_metrics_1m (tenant_id, project_id, minute, model, name, trace_count, error_count,
           prompt_tokens, completion_tokens, cost, latency_ms_sum, latency_ms, version)
         SELECT *, toUnixTimestamp64Nano(now64(9)) FROM (${fresh} UNION ALL ${vanished} UNION ALL ${markers})`,
        {
          tenant: tenantId,
          minutes: minutes.map(toChDateTime),
          lo: toChDateTime(minutes[0]!),
          hi: toChDateTime(minutes[minutes.length - 1]! + 60_000),
        },
      );
    },

    /** The groups with the most traces in the range, `limit` of them. */
    async topGroups(scope: RollupScope, groupBy: GroupBy, limit: number): Promise<string[]> {
      const { where, params } = currentRollup(scope);
      const { column } = GROUP_COLUMN[groupBy];
      const rows = await ch.rows<{ grp: string }>(
        'metrics.top_groups',
        `SELECT toString(${column}) AS grp, sum(trace_count) AS n FROM trace_metrics_1m
         WHERE ${where} GROUP BY grp ORDER BY n DESC, grp LIMIT {limit:UInt32}`,
        { ...params, limit },
      );
      return rows.map((r) => r.grp);
    },

    /** Sums and merged latency sketches per interval bucket (and group), buckets with traces only. */
    async series(scope: RollupScope, interval: Interval, group?: { by: GroupBy; values: readonly string[] }): Promise<MetricsRow[]> {
      const { where, params } = currentRollup(scope);
      const g = group ? GROUP_COLUMN[group.by] : undefined;
      const rows = await ch.rows<RawMetricsRow>(
        'metrics.series',
        `SELECT toUnixTimestamp(${BUCKET_EXPR[interval]}) AS bucket_s,
           ${g ? `toString(${g.column}) AS grp,` : ''}
           sum(trace_count) AS n_traces, sum(error_count) AS n_errors,
           sum(prompt_tokens) AS n_prompt, sum(completion_tokens) AS n_completion,
           sum(cost) AS cost_sum, sum(latency_ms_sum) AS latency_sum,
           ${sketch('Merge')}(latency_ms) AS latency
         FROM trace_metrics_1m
         WHERE ${where}${g ? ` AND ${g.column} IN {groups:Array(${g.type})}` : ''}
         GROUP BY bucket_s${g ? ', grp' : ''}
         ORDER BY ${g ? 'grp, ' : ''}bucket_s`,
        { ...params, ...(group ? { groups: group.values } : {}) },
      );
      return rows.map((r) => ({
        bucket_s: r.bucket_s,
        group: r.grp ?? null,
        trace_count: Number(r.n_traces),
        error_count: Number(r.n_errors),
        prompt_tokens: Number(r.n_prompt),
        completion_tokens: Number(r.n_completion),
        cost: r.cost_sum,
        latency_ms_sum: Number(r.latency_sum),
        latency: [r.latency[0] ?? null, r.latency[1] ?? null, r.latency[2] ?? null],
      }));
    },
  };
}

export type MetricsRepository = ReturnType<typeof metricsRepository>;

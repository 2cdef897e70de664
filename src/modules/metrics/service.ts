import { AppError } from '../../platform/errors.js';
import type { ProjectService } from '../projects/service.js';
import type { GroupBy, Interval, MetricsRepository, MetricsRow, RollupScope } from './repo.js';
import { MAX_BUCKETS, type MetricsPoint, type MetricsQuery, type MetricsResponse, type MetricsSeries } from './schemas.js';
import { roundUsd } from '../../platform/money.js';
import type { MetricsWindowRepository, ProjectWindow } from './windows.js';

// The module's secondary services and helpers that other modules use: this file is its public face.
export { metricsRetention } from './retention-service.js';

export type { ProjectWindow } from './windows.js';

const INTERVAL_MS: Record<Interval, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };
const DEFAULT_RANGE_MS = 24 * 3_600_000;
// ClickHouse DateTime covers 1970-01-01 to 2106-02-07.
const MAX_TIME_MS = Date.UTC(2106, 0, 1);

const badParameter = (name: string, message: string) =>
  new AppError(400, 'bad_request', `query.${name}: ${message}`, { details: [{ path: `query.${name}`, message }] });

/** The requested range, widened to whole buckets, and refused when it would answer too many. */
export function resolveRange(query: Pick<MetricsQuery, 'from' | 'to' | 'interval'>, now: number) {
  const width = INTERVAL_MS[query.interval];
  const toMs = query.to ? Date.parse(query.to) : now;
  const fromMs = query.from ? Date.parse(query.from) : toMs - DEFAULT_RANGE_MS;
  if (fromMs < 0 || fromMs >= MAX_TIME_MS) throw badParameter('from', 'must lie between 1970 and 2105');
  if (toMs <= 0 || toMs >= MAX_TIME_MS) throw badParameter('to', 'must lie between 1970 and 2105');
  if (fromMs >= toMs) throw query.to ? badParameter('to', 'must be after from') : badParameter('from', 'must be before to, which defaults to now');
  const from = Math.floor(fromMs / width) * width;
  const to = Math.ceil(toMs / width) * width;
  const buckets = (to - from) / width;
  if (buckets > MAX_BUCKETS) {
    throw badParameter(
      'from',
      `the range holds ${buckets} ${query.interval} buckets, at most ${MAX_BUCKETS} are allowed: narrow from/to or choose a coarser interval`,
    );
  }
  return { fromMs: from, toMs: to };
}

const round = (value: number, digits: number) => Number(value.toFixed(digits));

function toPoint(row: MetricsRow): MetricsPoint {
  const [p50, p95, p99] = row.latency.map((v) => (v === null || !Number.isFinite(v) ? null : round(v, 2)));
  return {
    timestamp: new Date(row.bucket_s * 1000).toISOString(),
    trace_count: row.trace_count,
    error_count: row.error_count,
    error_rate: row.error_count / row.trace_count,
    latency_avg_ms: round(row.latency_ms_sum / row.trace_count, 2),
    latency_p50_ms: p50 ?? null,
    latency_p95_ms: p95 ?? null,
    latency_p99_ms: p99 ?? null,
    prompt_tokens: row.prompt_tokens,
    completion_tokens: row.completion_tokens,
    total_tokens: row.prompt_tokens + row.completion_tokens,
    cost: roundUsd(row.cost),
  };
}

const groupOf = (by: GroupBy, value: string): MetricsSeries['group'] =>
  by === 'model' ? { model: value } : by === 'project' ? { project_id: value } : { name: value };

/** GET /v1/metrics: series of per-bucket trace metrics, read from the per-minute rollup only. */
export class MetricsService {
  constructor(
    private readonly repo: MetricsRepository,
    private readonly projects: ProjectService,
    private readonly windows: MetricsWindowRepository,
  ) {}

  /** Tenants with traffic in [fromMs, toMs) (anomaly scans). */
  async activeTenants(fromMs: number, toMs: number): Promise<string[]> {
    return this.windows.activeTenants(fromMs, toMs);
  }

  /** Each project's traffic in fixed windows of `windowMinutes` (anomaly scans). */
  async projectWindows(tenantId: string, fromMs: number, toMs: number, windowMinutes: number): Promise<ProjectWindow[]> {
    return this.windows.projectWindows(tenantId, fromMs, toMs, windowMinutes);
  }

  async query(tenantId: string, query: MetricsQuery, now = Date.now()): Promise<MetricsResponse> {
    const range = resolveRange(query, now);
    if (query.project_id) await this.projects.get(tenantId, query.project_id);
    const scope: RollupScope = { tenantId, ...range, ...(query.project_id ? { projectId: query.project_id } : {}) };
    const base = {
      interval: query.interval,
      from: new Date(range.fromMs).toISOString(),
      to: new Date(range.toMs).toISOString(),
      group_by: query.group_by ?? null,
      project_id: query.project_id ?? null,
    };
    if (!query.group_by) {
      const rows = await this.repo.series(scope, query.interval);
      return { ...base, series: [{ group: null, points: rows.map(toPoint) }], has_more_groups: false };
    }
    const top = await this.repo.topGroups(scope, query.group_by, query.group_limit + 1);
    const groups = top.slice(0, query.group_limit);
    const rows = groups.length > 0 ? await this.repo.series(scope, query.interval, { by: query.group_by, values: groups }) : [];
    const points = new Map<string, MetricsPoint[]>(groups.map((g) => [g, []]));
    for (const row of rows) points.get(row.group ?? '')?.push(toPoint(row));
    const by = query.group_by;
    return {
      ...base,
      series: groups.map((g) => ({ group: groupOf(by, g), points: points.get(g) ?? [] })),
      has_more_groups: top.length > groups.length,
    };
  }
}

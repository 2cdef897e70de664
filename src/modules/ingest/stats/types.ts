/**
 * Why traces and spans of an ingest request were not stored (GET /v1/ingest/stats, the
 * `looptrace_ingest_spans_refused_total` reason label). docs/ingest.md, "Received vs stored", says
 * which answer each one stands for.
 */
export const REFUSAL_REASONS = [
  'validation',
  'duplicate',
  'in_flight',
  'quota',
  'project_archived',
  'project_not_found',
  'native_trace',
  'embedding_dimension',
  'store_unavailable',
  'error',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

export type IngestSource = 'native' | 'otlp';

export type ReasonCounts = Partial<Record<RefusalReason, number>>;

/** Refusals that name no project of the tenant are kept under the nil UUID (shown as null). */
export const NO_PROJECT = '00000000-0000-0000-0000-000000000000';

export const MINUTE_MS = 60_000;
export const minuteOf = (ms: number): number => Math.floor(ms / MINUTE_MS) * MINUTE_MS;

/** What is added to one (tenant, project, minute) row of `ingest_stats`. */
export interface CountDelta {
  tenantId: string;
  /** null: no project of the tenant. */
  projectId: string | null;
  minuteMs: number;
  tracesReceived: number;
  tracesStored: number;
  spansReceived: number;
  spansStored: number;
  refusedSpans: ReasonCounts;
  refusedTraces: ReasonCounts;
}

/** Traces and spans of one request that its write stores, counted when (and where) that write commits. */
export interface StoredCount {
  tenantId: string;
  projectId: string;
  /** The minute the request arrived: all of a request's counts go to it. */
  minuteMs: number;
  source: IngestSource;
  traces: number;
  spans: number;
}

export const emptyDelta = (tenantId: string, projectId: string | null, minuteMs: number): CountDelta => ({
  tenantId,
  projectId,
  minuteMs,
  tracesReceived: 0,
  tracesStored: 0,
  spansReceived: 0,
  spansStored: 0,
  refusedSpans: {},
  refusedTraces: {},
});

const addReasons = (into: ReasonCounts, from: ReasonCounts) => {
  for (const [reason, n] of Object.entries(from) as [RefusalReason, number][]) into[reason] = (into[reason] ?? 0) + n;
};

/** Adds `from` into `into` (same row). */
export function mergeDelta(into: CountDelta, from: CountDelta): void {
  into.tracesReceived += from.tracesReceived;
  into.tracesStored += from.tracesStored;
  into.spansReceived += from.spansReceived;
  into.spansStored += from.spansStored;
  addReasons(into.refusedSpans, from.refusedSpans);
  addReasons(into.refusedTraces, from.refusedTraces);
}

export const deltaKey = (d: Pick<CountDelta, 'tenantId' | 'projectId' | 'minuteMs'>) => `${d.tenantId}|${d.projectId ?? NO_PROJECT}|${d.minuteMs}`;

/** One delta per row, in key order (tenant, minute, project): the order every writer locks rows in. */
export function combine(deltas: Iterable<CountDelta>): CountDelta[] {
  const rows = new Map<string, CountDelta>();
  for (const d of deltas) {
    const key = deltaKey(d);
    const row = rows.get(key);
    if (row) mergeDelta(row, d);
    else rows.set(key, { ...d, refusedSpans: { ...d.refusedSpans }, refusedTraces: { ...d.refusedTraces } });
  }
  return [...rows.values()].sort(
    (a, b) =>
      (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : 0) ||
      a.minuteMs - b.minuteMs ||
      ((a.projectId ?? NO_PROJECT) < (b.projectId ?? NO_PROJECT) ? -1 : (a.projectId ?? NO_PROJECT) > (b.projectId ?? NO_PROJECT) ? 1 : 0),
  );
}

/** Stored counts as deltas. */
export const storedDeltas = (items: readonly StoredCount[]): CountDelta[] =>
  items.map((s) => ({ ...emptyDelta(s.tenantId, s.projectId, s.minuteMs), tracesStored: s.traces, spansStored: s.spans }));

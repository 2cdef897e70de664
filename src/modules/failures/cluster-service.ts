import { newId } from '../../platform/ids.js';
import type { TxSql } from '../../stores/pg.js';
import type { ClusterRepository, ClusterRow } from './clusters-repo.js';
import { addOccurrence, occurrenceKey, type OccurrenceGroup, type TraceOccurrences } from './match.js';
import type { FailureCluster } from './schemas.js';
import type { EventSink } from '../webhooks/types.js';

/** A cluster seen again after this long without occurrences fires failure.detected again. */
export const DEFAULT_QUIET_PERIOD_MS = 60 * 60 * 1000;

export interface FailureOccurrence {
  projectId: string;
  /** Any type: a failure type, or a pipeline type such as RemediationRegression. */
  type: string;
  error: string;
  traceId: string;
  at: Date;
}

export function toCluster(row: ClusterRow): FailureCluster {
  return {
    id: row.id,
    project_id: row.project_id,
    type: row.type,
    signature: row.signature,
    sample_error: row.sample_error,
    first_seen: row.first_seen.toISOString(),
    last_seen: row.last_seen.toISOString(),
    count: row.count,
    trace_count: row.trace_count,
    example_trace_ids: row.example_trace_ids,
    last_notified_at: row.last_notified_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
  };
}

/**
 * Why a batch that grew an existing cluster is news: its first occurrence after the cluster's
 * previous last_seen comes a quiet period or more later. A trace spanning last_seen is continuity.
 */
function recurred(previousLastSeen: Date, grown: readonly TraceOccurrences[], quietPeriodMs: number): boolean {
  const previous = previousLastSeen.getTime();
  const later = grown.filter((t) => t.lastMs > previous);
  if (later.length === 0) return false;
  return Math.min(...later.map((t) => t.firstMs)) - previous >= quietPeriodMs;
}

/**
 * Upserts clusters from occurrence groups and fires failure.detected for a new cluster and for one
 * that recurred after the quiet period, in the caller's transaction. Counting is exact and
 * idempotent: each (cluster, trace) remembers how many matching spans it gave, and only growth
 * counts, so the same trace looked at again (an OTLP trace after every rollup) adds nothing twice.
 */
/** Told, in the transaction that grows a cluster, which traces joined it (the control loop's triggers). */
export interface ClusterJoinObserver {
  tracesJoined(tx: TxSql, tenantId: string, join: { projectId: string; type: string; signature: string; traceIds: readonly string[] }): Promise<void>;
}

export class ClusterRecorder {
  constructor(
    private readonly repo: ClusterRepository,
    private readonly events: EventSink,
    private readonly joins: ClusterJoinObserver | null = null,
    private readonly quietPeriodMs = DEFAULT_QUIET_PERIOD_MS,
  ) {}

  /** The cluster after the batch; `grew` is false when the batch held nothing not already counted. */
  async apply(tx: TxSql, tenantId: string, group: OccurrenceGroup): Promise<{ cluster: ClusterRow; grew: boolean }> {
    const occurrences = [...group.traces.entries()];
    const times = occurrences.flatMap(([, t]) => [t.firstMs, t.lastMs]);
    const { row, created } = await this.repo.lockOrCreate(tx, tenantId, {
      id: newId(),
      project_id: group.projectId,
      type: group.type,
      signature: group.signature,
      sample_error: group.sampleError,
      first_seen: new Date(Math.min(...times)),
      last_seen: new Date(Math.max(...times)),
    });
    const counted = await this.repo.counted(tx, row.id, occurrences.map(([id]) => id));
    const grown = occurrences.filter(([id, t]) => t.spans > (counted.get(id) ?? 0)).sort(([, a], [, b]) => a.firstMs - b.firstMs);
    if (grown.length === 0) return { cluster: row, grew: false };
    const reason = created ? 'new' : recurred(row.last_seen, grown.map(([, t]) => t), this.quietPeriodMs) ? 'recurred' : null;
    const updated = await this.repo.grow(tx, tenantId, row.id, {
      traces: grown.map(([id, t]) => ({ id, spans: t.spans })),
      addedSpans: grown.reduce((sum, [id, t]) => sum + t.spans - (counted.get(id) ?? 0), 0),
      newTraceIds: grown.filter(([id]) => !counted.has(id)).map(([id]) => id),
      firstSeen: new Date(Math.min(...grown.map(([, t]) => t.firstMs))),
      lastSeen: new Date(Math.max(...grown.map(([, t]) => t.lastMs))),
      notify: reason !== null,
    });
    const joined = grown.filter(([id]) => !counted.has(id)).map(([id]) => id);
    if (this.joins && joined.length > 0) {
      await this.joins.tracesJoined(tx, tenantId, { projectId: updated.project_id, type: updated.type, signature: updated.signature, traceIds: joined });
    }
    if (reason) {
      const { id, created_at: _created, last_notified_at: _notified, ...cluster } = toCluster(updated);
      await this.events.emit(tenantId, { type: 'failure.detected', project_id: updated.project_id, data: { cluster_id: id, ...cluster, reason } }, tx);
    }
    return { cluster: updated, grew: true };
  }

  /**
   * One occurrence of any type from another pipeline (e.g. a RemediationRegression): clustered,
   * counted and notified exactly like detected failures. Recording the same trace twice counts it once.
   */
  async record(tenantId: string, occurrence: FailureOccurrence): Promise<FailureCluster> {
    const groups = new Map<string, OccurrenceGroup>();
    addOccurrence(groups, occurrenceKey(occurrence.projectId, occurrence.type, occurrence.error), occurrence.projectId, occurrence.traceId.toLowerCase(), occurrence.at.getTime());
    const [group] = groups.values();
    return this.repo.begin(async (tx) => toCluster((await this.apply(tx, tenantId, group!)).cluster));
  }
}

import { AppError } from '../../../platform/errors.js';
import { storeOutage } from '../../../platform/store-errors.js';
import type { IngestCounters } from './counters.js';
import { emptyDelta, mergeDelta, minuteOf, type CountDelta, type IngestSource, type RefusalReason, type StoredCount } from './types.js';

/** What became of a part of a request. `quota`: refused, and counted by the registry's claim transaction. `handed`: the write path counts it. */
type Outcome = { kind: 'open' } | { kind: 'refused'; reason: RefusalReason } | { kind: 'quota' } | { kind: 'handed' };

/** Some traces and spans of a request, headed to one project, with one outcome. */
export interface Part {
  projectId: string | null;
  traces: number;
  spans: number;
  outcome: Outcome;
}

const BY_CODE: Record<string, RefusalReason> = {
  validation_error: 'validation',
  bad_request: 'validation',
  not_found: 'project_not_found',
  'error.project.archived': 'project_archived',
  trace_exists: 'duplicate',
  trace_quota_exceeded: 'quota',
  'embedding.dimension_mismatch': 'embedding_dimension',
};

/** The refusal an error stands for, for the parts of a request it left undecided. */
export function reasonOf(err: unknown): RefusalReason {
  if (err instanceof AppError) return BY_CODE[err.code] ?? (err.status === 503 ? 'store_unavailable' : 'error');
  return storeOutage(err) ? 'store_unavailable' : 'error';
}

/**
 * One ingest request's counts, decided as the request goes and recorded when it ends: every trace
 * and span it carried is received, and each part of them ends refused (with a reason), refused by
 * the quota (counted by the claim's transaction), or handed to the write path (which counts it
 * stored, or refused store_unavailable, once its write is decided). A part still open when the
 * request fails takes the failure's reason, so a request's counts always add up.
 */
export class IngestTally {
  readonly minuteMs: number;
  private readonly parts: Part[] = [];
  private closed = false;

  constructor(
    private readonly counters: IngestCounters,
    readonly tenantId: string,
    readonly source: IngestSource,
    now: number,
  ) {
    this.minuteMs = minuteOf(now);
  }

  part(projectId: string | null, traces: number, spans: number): Part {
    const part: Part = { projectId, traces, spans, outcome: { kind: 'open' } };
    if (traces > 0 || spans > 0) this.parts.push(part);
    return part;
  }

  refuse(projectId: string | null, reason: RefusalReason, traces: number, spans: number): void {
    this.part(projectId, traces, spans).outcome = { kind: 'refused', reason };
  }

  /** Refused by the quota: the claim's transaction wrote the refusal; here only the received counts. */
  quota(projectId: string, traces: number, spans: number): void {
    this.part(projectId, traces, spans).outcome = { kind: 'quota' };
  }

  /**
   * Refuses `parts` for a failed resolution of their project: under the project for an archived one,
   * under no project for one that is not the tenant's (or none named). Other errors leave them open.
   */
  refuseForProject(parts: readonly Part[], err: unknown): void {
    const reason = reasonOf(err);
    if (reason !== 'project_archived' && reason !== 'project_not_found' && reason !== 'validation') return;
    for (const p of parts) {
      if (reason !== 'project_archived') p.projectId = null;
      p.outcome = { kind: 'refused', reason };
    }
  }

  /** Parts headed to the write path, as the stored counts it carries (one per project). */
  hand(parts: readonly Part[]): StoredCount[] {
    const byProject = new Map<string, StoredCount>();
    for (const p of parts) {
      if (p.projectId === null) throw new Error('ingest tally: a stored part has no project');
      p.outcome = { kind: 'handed' };
      const stored = byProject.get(p.projectId) ?? { tenantId: this.tenantId, projectId: p.projectId, minuteMs: this.minuteMs, source: this.source, traces: 0, spans: 0 };
      stored.traces += p.traces;
      stored.spans += p.spans;
      byProject.set(p.projectId, stored);
    }
    return [...byProject.values()];
  }

  /** Records the request's counts (once); open parts are refused for `error`'s reason. */
  close(error?: unknown): void {
    if (this.closed) return;
    this.closed = true;
    const memory = new Map<string, CountDelta>();
    const claimed = new Map<string, CountDelta>();
    const rowOf = (rows: Map<string, CountDelta>, projectId: string | null) => {
      const key = projectId ?? '';
      const row = rows.get(key) ?? emptyDelta(this.tenantId, projectId, this.minuteMs);
      rows.set(key, row);
      return row;
    };
    for (const p of this.parts) {
      const outcome: Outcome = p.outcome.kind === 'open' ? { kind: 'refused', reason: reasonOf(error) } : p.outcome;
      const received = rowOf(memory, p.projectId);
      received.tracesReceived += p.traces;
      received.spansReceived += p.spans;
      if (outcome.kind === 'refused') addRefusal(received, outcome.reason, p);
      if (outcome.kind === 'quota') addRefusal(rowOf(claimed, p.projectId), 'quota', p);
    }
    for (const row of memory.values()) this.counters.count(this.source, row);
    for (const row of claimed.values()) this.counters.count(this.source, row, false);
  }

  /** Runs a request's work and closes the tally with its outcome. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    try {
      const result = await work();
      this.close();
      return result;
    } catch (err) {
      this.close(err);
      throw err;
    }
  }
}

function addRefusal(row: CountDelta, reason: RefusalReason, part: Part): void {
  const refusal = emptyDelta(row.tenantId, row.projectId, row.minuteMs);
  if (part.spans > 0) refusal.refusedSpans[reason] = part.spans;
  if (part.traces > 0) refusal.refusedTraces[reason] = part.traces;
  mergeDelta(row, refusal);
}

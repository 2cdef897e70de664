import type { Span, Trace } from './schemas.js';
import { toSpan, toTrace } from './stored.js';
import type { SubjectTraceRepository, TraceRef, TraceSubject } from './subject-repo.js';

export type { TraceRef, TraceSubject } from './subject-repo.js';

/**
 * The traces module's part of a data-subject request (src/modules/privacy): finding a subject's
 * traces in ClickHouse, reading them for an export, and erasing their spans and trace rows.
 * Callers pass the traces in batches (the privacy module uses 1,000).
 */
export class SubjectTraceService {
  constructor(private readonly repo: SubjectTraceRepository) {}

  find(tenantId: string, subject: TraceSubject): Promise<TraceRef[]> {
    return this.repo.find(tenantId, subject);
  }

  countSpans(tenantId: string, refs: readonly TraceRef[]): Promise<number> {
    return this.repo.countSpans(tenantId, refs);
  }

  /** The traces and their spans as GET /v1/traces/{id} shows them. */
  async read(tenantId: string, refs: readonly TraceRef[]): Promise<{ traces: Trace[]; spans: Span[] }> {
    const [traces, spans] = await Promise.all([this.repo.traces(tenantId, refs), this.repo.spans(tenantId, refs)]);
    return { traces: traces.map(toTrace), spans: spans.map(toSpan) };
  }

  /** Idempotent: erasing erased traces deletes nothing. */
  eraseTraces(tenantId: string, refs: readonly TraceRef[]): Promise<void> {
    return this.repo.erase(tenantId, refs);
  }

  /** Rows of these traces still in spans or traces. */
  remaining(tenantId: string, refs: readonly TraceRef[]): Promise<number> {
    return this.repo.remaining(tenantId, refs);
  }

  /** Makes the erasures so far physical (rewrites the parts that hold deleted rows). */
  purge(): Promise<void> {
    return this.repo.purge();
  }
}

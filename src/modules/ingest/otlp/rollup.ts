import { buildTraceRow } from '../normalize.js';
import type { TraceRegistry } from '../registry.js';
import { summarizeSpans } from '../rows.js';
import { nanosToMillis } from '../../../platform/time.js';
import type { OtlpRepository, RollupSpanRow } from './repo.js';
import type { TraceRollupJob } from './schemas.js';

/** Sees trace rows being (re)written, e.g. to recompute the metrics of their minutes. */
export interface TraceWriteObserver {
  aroundWrite<T>(rows: readonly { tenant_id: string; started_at: string }[], write: () => Promise<T>): Promise<T>;
}

export type RollupOutcome =
  | { status: 'written'; span_count: number; moved: boolean }
  | { status: 'no_spans' };

const MAX_TAGS = 100;
const CONTROL = /[\u0000-\u001f]/;

/** The trace's root: the earliest span without a parent, else the earliest span (ties by id). */
export function pickRoot(spans: readonly RollupSpanRow[]): RollupSpanRow {
  const earliest = (a: RollupSpanRow, b: RollupSpanRow) => {
    const d = BigInt(a.start_ns) - BigInt(b.start_ns);
    return d < 0n ? a : d > 0n ? b : a.span_id <= b.span_id ? a : b;
  };
  const roots = spans.filter((s) => s.parent_span_id === null);
  return (roots.length > 0 ? roots : spans).reduce(earliest);
}

/** Session id and tags that OTLP spans carry as attributes (docs/ingest.md): root first, then by start. */
function traceHints(spans: readonly RollupSpanRow[], root: RollupSpanRow) {
  const ordered = [root, ...spans.filter((s) => s !== root).sort((a, b) => (BigInt(a.start_ns) < BigInt(b.start_ns) ? -1 : 1))];
  let sessionId = '';
  for (const s of ordered) {
    sessionId = s.session.find((v) => v !== '') ?? '';
    if (sessionId) break;
  }
  const tags = new Set<string>();
  const tagMap: Record<string, string> = {};
  for (const s of ordered) {
    for (const tag of s.tags.flat()) if (tag && tag.length <= 400 && !CONTROL.test(tag) && tags.size < MAX_TAGS) tags.add(tag);
    for (const [k, v] of Object.entries(s.tag_map)) {
      if (k && v && k.length <= 200 && v.length <= 200 && !CONTROL.test(k) && !CONTROL.test(v) && !(k in tagMap)) tagMap[k] = v;
    }
  }
  return { sessionId: sessionId.slice(0, 256), tags: [...tags], tagMap };
}

/**
 * Recomputes one OTLP trace's row from all of its spans. Idempotent and re-derivable: the result
 * depends only on the spans stored, and a new row version replaces the old one. When the trace's
 * start moved (an earlier span arrived), the old row is deleted first, because its sorting key
 * differs and the list must never show two versions of one trace.
 */
export class TraceRollupService {
  constructor(
    private readonly repo: OtlpRepository,
    private readonly registry: TraceRegistry,
    private readonly observer?: TraceWriteObserver,
  ) {}

  async rollup(job: TraceRollupJob): Promise<RollupOutcome> {
    const { tenant_id: tenantId, project_id: projectId, trace_id: traceId } = job;
    // Read before the spans: span commits confirmed after this point owe the trace another rollup.
    const spansAt = await this.registry.spansAt(tenantId, traceId);
    const outcome = await this.recompute(tenantId, projectId, traceId);
    if (spansAt) await this.registry.markRolledUp(tenantId, traceId, spansAt);
    return outcome;
  }

  private async recompute(tenantId: string, projectId: string, traceId: string): Promise<RollupOutcome> {
    const spans = await this.repo.traceSpans(tenantId, projectId, traceId);
    if (spans.length === 0) return { status: 'no_spans' };
    const root = pickRoot(spans);
    const detail = await this.repo.rootDetail(tenantId, projectId, traceId, root.span_id);
    const summary = summarizeSpans(
      spans.map((s) => ({
        startNs: BigInt(s.start_ns),
        endNs: BigInt(s.end_ns),
        promptTokens: Number(s.prompt_tokens),
        completionTokens: Number(s.completion_tokens),
        cost: s.cost,
        model: s.model,
        error: s.error,
        failureType: s.failure_type,
        type: s.type,
      })),
    );
    const hints = traceHints(spans, root);
    const stored = await this.repo.traceVersions(tenantId, projectId, traceId);
    const resource = detail?.resource ? (JSON.parse(detail.resource) as unknown) : undefined;
    const row = buildTraceRow({
      tenantId,
      projectId,
      id: traceId,
      startNs: summary.start!,
      endNs: summary.end!,
      name: root.name,
      input: detail?.input ?? '',
      output: detail?.output ?? '',
      sessionId: hints.sessionId,
      externalId: '',
      model: summary.model,
      tags: hints.tags,
      tagMap: hints.tagMap,
      metadata: resource && typeof resource === 'object' ? { 'otel.resource': resource } : {},
      error: summary.error,
      summary,
      spanCount: spans.length,
      // Newer than anything stored even if this worker's clock lags the previous one's.
      version: Math.max(Date.now(), ...stored.map((s) => s.version + 1)),
    });
    const moved = stored.some((s) => s.startedAt !== row.started_at);
    const write = async () => {
      if (moved) await this.repo.deleteTrace(tenantId, projectId, traceId);
      await this.repo.insertTrace(row);
    };
    const touched = [row, ...stored.filter((s) => s.startedAt !== row.started_at).map((s) => ({ tenant_id: tenantId, started_at: s.startedAt }))];
    await (this.observer ? this.observer.aroundWrite(touched, write) : write());
    await this.registry.relocateOtlp(tenantId, traceId, nanosToMillis(summary.start!));
    return { status: 'written', span_count: spans.length, moved };
  }
}

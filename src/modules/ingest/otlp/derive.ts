import { millisToClickHouse, nanosToMillis } from '../../../platform/time.js';
import { buildTraceRow } from '../normalize.js';
import type { TraceRow } from '../rows.js';
import type { StoredTraceKey } from '../tokens-repo.js';
import type { OtlpRepository, RootDetailRow, StoredSpanRow } from './repo.js';
import type { LockedTrace, SavedTrace } from './state-repo.js';
import { foldSpans, traceFields, type OtlpSpanWrite, type OtlpTraceState, type RootDetail, type SpanFacts } from './trace-state.js';

export interface DerivedTraces {
  /** New trace rows, and a tombstone for each row whose sorting key (started_at) moved. */
  rows: TraceRow[];
  saved: SavedTrace[];
  /** Rows derived from spans an earlier commit stored: their tokens are made from those spans (tokens-repo.ts). */
  storedSpansOf: StoredTraceKey[];
}

interface TraceGroup {
  tenantId: string;
  projectId: string;
  traceId: string;
  spans: OtlpSpanWrite[];
}

const keyOf = (tenantId: string, traceId: string) => `${tenantId}|${traceId}`;
const NO_DETAIL: RootDetail = { input: '', output: '', resource: undefined };

/** A span read back from ClickHouse, as the fold takes it. */
function storedFacts(row: StoredSpanRow): SpanFacts {
  return {
    spanId: row.span_id,
    parentless: row.parent_span_id === null,
    name: row.name,
    type: row.type,
    model: row.model,
    startNs: BigInt(row.start_ns),
    endNs: BigInt(row.end_ns),
    promptTokens: Number(row.prompt_tokens),
    completionTokens: Number(row.completion_tokens),
    cost: row.cost,
    error: row.error,
    failureType: row.failure_type,
    session: row.session.find((v) => v !== '') ?? '',
    tags: row.tags.flat(),
    tagMap: row.tag_map,
  };
}

function parseResource(raw: string): unknown {
  if (!raw) return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Derives the trace rows of the OTLP traces a group commit touches, set-wise: the states locked
 * for the commit, the commit's spans folded in, and at most two ClickHouse reads for the whole
 * commit, both for uncommon cases (a root span stored by an earlier commit while later spans
 * arrive; traces whose state was never kept). Never a query or an insert per trace.
 */
export class OtlpTraceDeriver {
  constructor(private readonly repo: OtlpRepository) {}

  /** The rows and states of the traces these spans belong to; `locked` are their registry rows, locked for this commit. */
  async derive(locked: readonly LockedTrace[], spans: readonly OtlpSpanWrite[], nowMs: number): Promise<DerivedTraces> {
    const groups = new Map<string, TraceGroup>();
    for (const s of spans) {
      const key = keyOf(s.tenantId, s.traceId);
      const group = groups.get(key) ?? { tenantId: s.tenantId, projectId: s.projectId, traceId: s.traceId, spans: [] };
      group.spans.push(s);
      groups.set(key, group);
    }
    return this.fold(locked, [...groups.values()], nowMs, false);
  }

  /**
   * Rewrites the rows of committed traces from all their stored spans: traces a settlement found
   * stored after their writer died, whose state the dead commit never saved.
   */
  rebuild(locked: readonly LockedTrace[], nowMs: number): Promise<DerivedTraces> {
    const groups = locked.map((l) => ({ tenantId: l.tenantId, projectId: l.projectId, traceId: l.traceId, spans: [] }));
    return this.fold(
      locked.map((l) => ({ ...l, state: null })),
      groups,
      nowMs,
      true,
    );
  }

  private async fold(locked: readonly LockedTrace[], groups: readonly TraceGroup[], nowMs: number, force: boolean): Promise<DerivedTraces> {
    const prior = new Map(locked.map((l) => [keyOf(l.tenantId, l.traceId), l]));
    // Committed without a state: stored before states were kept, or by a commit that died before saving it.
    const unkept = groups.filter((g) => {
      const p = prior.get(keyOf(g.tenantId, g.traceId));
      return p?.committed === true && p.state === null;
    });
    const stored = await this.storedByTrace(unkept);

    const folded = groups.flatMap((group) => {
      const key = keyOf(group.tenantId, group.traceId);
      const row = prior.get(key);
      const earlier = stored.get(key) ?? [];
      const facts = [...earlier, ...group.spans.map((s) => s.facts)];
      if (!row?.state && facts.length === 0) return [];
      const next = foldSpans(row?.state ?? null, facts);
      // A trace without a state may have a row where the registry locates it (written by a commit that then died).
      if (row && !row.state) next.state.written = { startedAtMs: row.startedAtMs, version: 0 };
      const rootInBatch = group.spans.some((s) => s.facts.spanId === next.state.root.spanId);
      return [{ key, group, state: next.state, rootInBatch, changed: force || !row?.state || next.added > 0 }];
    });

    const needDetail = folded.filter((f) => f.changed && !f.rootInBatch);
    const details = await this.storedRootDetails(needDetail.map((f) => ({ ...f.group, rootSpanId: f.state.root.spanId })));

    const derived: DerivedTraces = { rows: [], saved: [], storedSpansOf: [] };
    for (const { key, group, state, changed, rootInBatch } of folded) {
      if (changed) {
        const detail = rootInBatch ? group.spans.find((s) => s.facts.spanId === state.root.spanId)!.detail : (details.get(key) ?? NO_DETAIL);
        const [row, ...tombstone] = this.rowsFor(group, state, detail, nowMs);
        derived.rows.push(row!, ...tombstone);
        if (stored.has(key)) derived.storedSpansOf.push({ tenantId: row!.tenant_id, projectId: row!.project_id, traceId: row!.id, startedAt: row!.started_at, version: row!.version });
      }
      derived.saved.push({
        tenantId: group.tenantId,
        traceId: group.traceId,
        projectId: group.projectId,
        startedAtMs: state.written!.startedAtMs,
        state,
        changed,
      });
    }
    return derived;
  }

  /** The row of a trace from its state (which records it as written), plus a tombstone if its start moved. */
  private rowsFor(group: TraceGroup, state: OtlpTraceState, detail: RootDetail, nowMs: number): TraceRow[] {
    const fields = traceFields(state);
    const previous = state.written;
    // Newer than the stored row even if this process's clock lags the previous writer's.
    const version = Math.max(nowMs, (previous?.version ?? 0) + 1);
    const row = buildTraceRow({
      tenantId: group.tenantId,
      projectId: group.projectId,
      id: group.traceId,
      ...fields,
      input: detail.input,
      output: detail.output,
      externalId: '',
      metadata: detail.resource && typeof detail.resource === 'object' ? { 'otel.resource': detail.resource } : {},
      version,
    });
    const startedAtMs = nanosToMillis(fields.startNs);
    state.written = { startedAtMs, version };
    if (!previous || previous.startedAtMs === startedAtMs) return [row];
    const previousStart = millisToClickHouse(previous.startedAtMs);
    // Only the sorting key and the version count: FINAL keeps this newest version of the old key, and readers skip it.
    const tombstone: TraceRow = { ...row, started_at: previousStart, ended_at: previousStart, input: '', output: '', metadata: '{}', is_deleted: 1 };
    return [row, tombstone];
  }

  private async storedByTrace(groups: readonly TraceGroup[]): Promise<Map<string, SpanFacts[]>> {
    const rows = await this.repo.storedSpans(groups);
    const byTrace = new Map<string, SpanFacts[]>();
    for (const row of rows) {
      const key = keyOf(row.tenant_id, row.trace_id);
      const facts = byTrace.get(key) ?? [];
      facts.push(storedFacts(row));
      byTrace.set(key, facts);
    }
    return byTrace;
  }

  private async storedRootDetails(roots: readonly (TraceGroup & { rootSpanId: string })[]): Promise<Map<string, RootDetail>> {
    const rows: RootDetailRow[] = await this.repo.rootDetails(
      roots.map((r) => ({ tenantId: r.tenantId, projectId: r.projectId, traceId: r.traceId, spanId: r.rootSpanId })),
    );
    return new Map(rows.map((r) => [keyOf(r.tenant_id, r.trace_id), { input: r.input, output: r.output, resource: parseResource(r.resource) }]));
  }
}

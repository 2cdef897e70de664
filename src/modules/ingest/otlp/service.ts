import type { AuthContext } from '../../../platform/auth.js';
import { PLANS } from '../../../platform/plans.js';
import { nanosToMillis } from '../../../platform/time.js';
import { buildSpan, type SpanFields } from '../normalize.js';
import type { PriceBook } from '../../pricing/service.js';
import type { TraceRegistry } from '../registry-service.js';
import type { SpanRow } from '../rows.js';
import { quotaExceeded } from '../service.js';
import type { IngestCounters } from '../stats/counters.js';
import { IngestTally, type Part } from '../stats/tally.js';
import type { TraceWritePath } from '../write-path.js';
import type { ProjectService } from '../../projects/service.js';
import type { OtlpResourceSpans } from './decode.js';
import { otlpSpanWrite } from './facts.js';
import { mapSpan } from './mapping.js';
import type { OtlpSpanWrite } from './trace-state.js';

export interface OtlpExportResult {
  acceptedSpans: number;
  rejectedSpans: number;
  /** Empty when nothing was rejected. */
  errorMessage: string;
  traceIds: string[];
}

const MAX_REASONS = 5;

/** The audit resource of one export (HTTP and gRPC alike): the trace when it was the only one. */
export function exportAuditResource(result: OtlpExportResult) {
  return {
    type: 'trace',
    id: result.traceIds.length === 1 ? result.traceIds[0]! : null,
    details: { accepted_spans: result.acceptedSpans, rejected_spans: result.rejectedSpans, traces: result.traceIds.length },
  };
}

/** A request's spans that passed validation, by trace: each trace's distinct spans and how many copies the request held. */
interface MappedRequest {
  byTrace: Map<string, SpanFields[]>;
  copies: Map<string, number>;
  /** Every span of the request, valid or not, repeated or not. */
  received: number;
}

const earliestStartMs = (spans: readonly SpanFields[]): number =>
  nanosToMillis(spans.reduce((min, s) => (s.startNs < min ? s.startNs : min), spans[0]!.startNs));

/** Counts rejected spans and keeps the first few reasons for the partialSuccess message. */
class Rejections {
  count = 0;
  private readonly reasons: string[] = [];
  add(reason: string, n = 1): void {
    this.count += n;
    if (this.reasons.length < MAX_REASONS && !this.reasons.includes(reason)) this.reasons.push(reason);
  }
  message(): string {
    return this.count === 0 ? '' : `${this.count} span(s) rejected: ${this.reasons.join('; ')}`;
  }
}

/**
 * POST /v1/otlp/traces (and the gRPC receiver). Spans are validated one by one (a bad span is
 * rejected, not the request), their traces registered (new ones count against the monthly quota,
 * known ones merge), and the spans group-committed through the ingest write path, which derives
 * the rows of their traces in the same commit. Only then is the request acknowledged, so the trace
 * is listable on its acknowledgement, and an exporter's retry of anything unacknowledged is safe.
 */
export class OtlpIngestService {
  constructor(
    private readonly registry: TraceRegistry,
    private readonly projects: ProjectService,
    private readonly writes: TraceWritePath,
    private readonly prices: PriceBook,
    private readonly counters: IngestCounters,
  ) {}

  /**
   * Counts (GET /v1/ingest/stats): every span of the request is received; a trace is received once
   * per request it appears in (among spans that validate: an invalid span names no trace to count).
   * A span that fails validation is refused as such; a trace's valid spans share its outcome.
   */
  async export(auth: AuthContext, request: readonly OtlpResourceSpans[], projectParam: string | undefined): Promise<OtlpExportResult> {
    const now = Date.now();
    const tally = new IngestTally(this.counters, auth.tenantId, 'otlp', now);
    return tally.run(async () => {
      const rejections = new Rejections();
      const mapped = this.map(request, rejections);
      const requested = projectParam ?? auth.defaultProjectId;
      const valid = [...mapped.copies.values()].reduce((n, c) => n + c, 0);
      let project;
      try {
        project = await this.projects.resolveForIngest(auth.tenantId, projectParam, auth.defaultProjectId);
      } catch (err) {
        // The request is refused whole, its invalid spans too: they count under the project's refusal.
        tally.refuseForProject([tally.part(requested, mapped.byTrace.size, mapped.received)], err);
        throw err;
      }
      tally.refuse(project.id, 'validation', 0, mapped.received - valid);
      const perTrace = new Map([...mapped.copies].map(([traceId, copies]) => [traceId, tally.part(project.id, 1, copies)]));

      const { targets, fresh } = await this.placeTraces(auth, project.id, mapped, perTrace, rejections, new Date(now));
      const prices = await this.prices.forTenant(auth.tenantId);
      const rows: SpanRow[] = [];
      const otlpSpans: OtlpSpanWrite[] = [];
      for (const [traceId, projectId] of targets) {
        const scope = { tenantId: auth.tenantId, projectId, prices, now };
        perTrace.get(traceId)!.projectId = projectId;
        for (const fields of mapped.byTrace.get(traceId)!) {
          const { row, summary } = buildSpan(fields, scope);
          rows.push(row);
          otlpSpans.push(otlpSpanWrite(scope, fields, summary));
        }
      }
      // On failure the exporter retries, and re-sent spans collapse onto the same rows.
      if (rows.length > 0) {
        const stored = tally.hand([...targets.keys()].map((traceId) => perTrace.get(traceId)!));
        await this.writes.commit({ tenantId: auth.tenantId, spans: rows, otlpSpans, reservedIds: fresh, stored });
      }
      return { acceptedSpans: rows.length, rejectedSpans: rejections.count, errorMessage: rejections.message(), traceIds: [...targets.keys()] };
    });
  }

  /** Validates and maps every span; the first copy of a repeated (trace, span) wins, the others are counted with it. */
  private map(request: readonly OtlpResourceSpans[], rejections: Rejections): MappedRequest {
    const byTrace = new Map<string, SpanFields[]>();
    const copies = new Map<string, number>();
    const seen = new Set<string>();
    let received = 0;
    for (const rs of request) {
      for (const ss of rs.scopeSpans) {
        for (const span of ss.spans) {
          received += 1;
          const mapped = mapSpan(span, rs.resource, ss.scope);
          if (!mapped.ok) {
            rejections.add(mapped.reason);
            continue;
          }
          const { traceId, spanId } = mapped.fields;
          copies.set(traceId, (copies.get(traceId) ?? 0) + 1);
          const key = `${traceId}/${spanId}`;
          if (seen.has(key)) continue;
          seen.add(key);
          const spans = byTrace.get(traceId) ?? [];
          spans.push(mapped.fields);
          byTrace.set(traceId, spans);
        }
      }
    }
    return { byTrace, copies, received };
  }

  /**
   * Where each trace's spans go: a new trace to the request's project, a known OTLP trace to the
   * project it lives in. Spans of natively ingested traces and of new traces past the quota are
   * rejected; when the quota alone left nothing to accept, the whole request is a 402.
   */
  private async placeTraces(
    auth: AuthContext,
    projectId: string,
    mapped: MappedRequest,
    parts: ReadonlyMap<string, Part>,
    rejections: Rejections,
    now: Date,
  ): Promise<{ targets: Map<string, string>; fresh: string[] }> {
    const targets = new Map<string, string>();
    if (mapped.byTrace.size === 0) return { targets, fresh: [] };
    const entries = [...mapped.byTrace].map(([traceId, spans]) => ({ traceId, startedAtMs: earliestStartMs(spans), spans: mapped.copies.get(traceId)! }));
    const quota = PLANS[auth.plan].tracesPerMonth;
    const registration = await this.registry.registerOtlp(auth.tenantId, projectId, entries, quota, now);
    for (const id of registration.fresh) targets.set(id, projectId);
    for (const known of registration.existing) {
      if (known.source === 'otlp') targets.set(known.traceId, known.projectId);
      else {
        rejections.add(`trace ${known.traceId} was ingested through /v1/ingest and cannot take OTLP spans`, mapped.copies.get(known.traceId)!);
        parts.get(known.traceId)!.outcome = { kind: 'refused', reason: 'native_trace' };
      }
    }
    for (const id of registration.overQuota) {
      rejections.add(quotaExceeded(quota).message, mapped.copies.get(id)!);
      parts.get(id)!.outcome = { kind: 'quota' };
    }
    if (targets.size === 0 && registration.overQuota.length > 0) throw quotaExceeded(quota);
    return { targets, fresh: registration.fresh };
  }
}

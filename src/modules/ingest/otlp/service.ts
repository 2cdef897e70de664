import type { AuthContext } from '../../../platform/auth.js';
import { PLANS } from '../../../platform/plans.js';
import { nanosToMillis } from '../../../platform/time.js';
import { buildSpan, type SpanFields } from '../normalize.js';
import type { PriceBook } from '../price-book.js';
import type { TraceRegistry } from '../registry.js';
import type { SpanRow } from '../rows.js';
import { quotaExceeded } from '../service.js';
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
  ) {}

  async export(auth: AuthContext, request: readonly OtlpResourceSpans[], projectParam: string | undefined): Promise<OtlpExportResult> {
    const project = await this.projects.resolveForIngest(auth.tenantId, projectParam, auth.defaultProjectId);
    const now = Date.now();
    const rejections = new Rejections();

    // Validate and map; the first copy of a repeated (trace, span) wins.
    const byTrace = new Map<string, SpanFields[]>();
    const seen = new Set<string>();
    for (const rs of request) {
      for (const ss of rs.scopeSpans) {
        for (const span of ss.spans) {
          const mapped = mapSpan(span, rs.resource, ss.scope);
          if (!mapped.ok) {
            rejections.add(mapped.reason);
            continue;
          }
          const key = `${mapped.fields.traceId}/${mapped.fields.spanId}`;
          if (seen.has(key)) continue;
          seen.add(key);
          const spans = byTrace.get(mapped.fields.traceId) ?? [];
          spans.push(mapped.fields);
          byTrace.set(mapped.fields.traceId, spans);
        }
      }
    }

    const { targets, fresh } = await this.placeTraces(auth, project.id, byTrace, rejections, new Date(now));
    const prices = await this.prices.forTenant(auth.tenantId);
    const rows: SpanRow[] = [];
    const otlpSpans: OtlpSpanWrite[] = [];
    for (const [traceId, projectId] of targets) {
      const scope = { tenantId: auth.tenantId, projectId, prices, now };
      for (const fields of byTrace.get(traceId)!) {
        const { row, summary } = buildSpan(fields, scope);
        rows.push(row);
        otlpSpans.push(otlpSpanWrite(scope, fields, summary));
      }
    }
    // On failure the exporter retries, and re-sent spans collapse onto the same rows.
    if (rows.length > 0) await this.writes.commit({ tenantId: auth.tenantId, spans: rows, otlpSpans, reservedIds: fresh });
    return { acceptedSpans: rows.length, rejectedSpans: rejections.count, errorMessage: rejections.message(), traceIds: [...targets.keys()] };
  }

  /**
   * Where each trace's spans go: a new trace to the request's project, a known OTLP trace to the
   * project it lives in. Spans of natively ingested traces and of new traces past the quota are
   * rejected; when the quota alone left nothing to accept, the whole request is a 402.
   */
  private async placeTraces(
    auth: AuthContext,
    projectId: string,
    byTrace: ReadonlyMap<string, SpanFields[]>,
    rejections: Rejections,
    now: Date,
  ): Promise<{ targets: Map<string, string>; fresh: string[] }> {
    const targets = new Map<string, string>();
    if (byTrace.size === 0) return { targets, fresh: [] };
    const entries = [...byTrace].map(([traceId, spans]) => ({ traceId, startedAtMs: earliestStartMs(spans) }));
    const quota = PLANS[auth.plan].tracesPerMonth;
    const registration = await this.registry.registerOtlp(auth.tenantId, projectId, entries, quota, now);
    for (const id of registration.fresh) targets.set(id, projectId);
    for (const known of registration.existing) {
      if (known.source === 'otlp') targets.set(known.traceId, known.projectId);
      else rejections.add(`trace ${known.traceId} was ingested through /v1/ingest and cannot take OTLP spans`, byTrace.get(known.traceId)!.length);
    }
    for (const id of registration.overQuota) rejections.add(quotaExceeded(quota).message, byTrace.get(id)!.length);
    if (targets.size === 0 && registration.overQuota.length > 0) throw quotaExceeded(quota);
    return { targets, fresh: registration.fresh };
  }
}

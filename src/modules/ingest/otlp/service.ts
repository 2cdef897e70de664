import type { JobEnqueuer } from '../../../jobs/enqueue.js';
import type { AuthContext } from '../../../platform/auth.js';
import { PLANS } from '../../../platform/plans.js';
import { nanosToMillis } from '../../../platform/time.js';
import type { GroupCommitBatcher } from '../batcher.js';
import { commitRows } from '../commit.js';
import { buildSpan, type SpanFields } from '../normalize.js';
import type { PriceBook } from '../price-book.js';
import type { RegistryLog, TraceRegistry } from '../registry.js';
import type { Registration } from '../registry-repo.js';
import type { SpanRow } from '../rows.js';
import { quotaExceeded } from '../service.js';
import type { ProjectService } from '../../projects/service.js';
import type { OtlpResourceSpans } from './decode.js';
import { mapSpan } from './mapping.js';
import type { TraceRollupJob } from './schemas.js';

export interface OtlpExportResult {
  acceptedSpans: number;
  rejectedSpans: number;
  /** Empty when nothing was rejected. */
  errorMessage: string;
  traceIds: string[];
}

/** Bursts of requests for one trace collapse into one recompute this long after the last one. */
export const ROLLUP_DELAY_MS = 1_000;
const MAX_REASONS = 5;
/** A rollup owed this long has missed its queued job (a queued one runs after ROLLUP_DELAY_MS). */
const OWED_ROLLUP_AFTER_MS = 10_000;
const OWED_ROLLUP_PAGE = 1_000;

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
 * POST /v1/otlp/traces. Spans are validated one by one (a bad span is rejected, not the request),
 * their traces registered (new ones count against the monthly quota, known ones merge), the rows
 * group-committed like native ingest, and then a throttled rollup of each touched trace queued.
 * Only then is the request acknowledged, so an exporter's retry of anything unacknowledged is safe.
 */
export class OtlpIngestService {
  constructor(
    private readonly registry: TraceRegistry,
    private readonly projects: ProjectService,
    private readonly batcher: GroupCommitBatcher,
    private readonly prices: PriceBook,
    private readonly jobs: JobEnqueuer,
    private readonly log: RegistryLog,
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
    const registrations: Registration[] = [];
    for (const [traceId, projectId] of targets) {
      const spans = byTrace.get(traceId)!;
      for (const fields of spans) rows.push(buildSpan(fields, { tenantId: auth.tenantId, projectId, prices, now }).row);
      registrations.push({ tenantId: auth.tenantId, traceId, projectId, startedAtMs: earliestStartMs(spans), source: 'otlp' });
    }
    if (rows.length > 0) {
      // On failure the exporter retries, and re-sent spans collapse onto the same rows.
      await commitRows(this.batcher, this.registry, { tenantId: auth.tenantId, traces: [], spans: rows, registrations, reservedIds: fresh });
      // The spans are committed and the registry owes each trace a rollup (spans_at), so the answer
      // does not wait for the queue: one that is away only delays the rollup until the reconcile
      // job finds it owed.
      void Promise.all(
        [...targets].map(([traceId, projectId]) => this.scheduleRollup({ tenant_id: auth.tenantId, project_id: projectId, trace_id: traceId })),
      ).catch((err: unknown) => this.log.warn({ err, traces: targets.size }, 'trace rollups not queued; the reconcile job will queue them'));
    }
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

  /** Queues the rollups the registry says are owed and no job did (Redis lost them, or was away). */
  async requeueOwedRollups(): Promise<number> {
    const owed = await this.registry.owedRollups(OWED_ROLLUP_AFTER_MS, OWED_ROLLUP_PAGE);
    for (const t of owed) await this.scheduleRollup({ tenant_id: t.tenantId, project_id: t.projectId, trace_id: t.traceId });
    return owed.length;
  }

  /**
   * Throttled per trace: requests while a run waits join it, a request during a run queues one
   * more, so a trace is recomputed at most about once per delay however long its spans keep
   * coming (a debounce would postpone it for as long as the stream lasts), and never twice at once.
   */
  private async scheduleRollup(job: TraceRollupJob): Promise<void> {
    await this.jobs.add('trace-rollup', 'rollup', job, {
      delay: ROLLUP_DELAY_MS,
      deduplication: { id: `${job.tenant_id}:${job.trace_id}`, keepLastIfActive: true },
    });
  }
}

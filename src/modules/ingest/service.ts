import type { AuthContext } from '../../platform/auth.js';
import { AppError, unavailable } from '../../platform/errors.js';
import { describeIssues, type FieldProblem } from '../../platform/http-errors.js';
import { PLANS } from '../../platform/plans.js';
import type { ProjectService } from '../projects/service.js';
import type { VectorDimensions } from '../search/dimensions.js';
import { normalizeTrace, type NormalizedTrace } from './normalize.js';
import type { PriceBook } from './price-book.js';
import type { NativeReservation, TraceRegistry } from './registry.js';
import { traceInput, type BatchItemResult, type TraceInput } from './schemas.js';
import type { TraceWritePath } from './write-path.js';

interface Candidate {
  index: number;
  normalized: NormalizedTrace;
}

/** A trace whose earlier write may still commit: the client retries it, shortly. */
const IN_FLIGHT_RETRY_SECONDS = 1;
const inFlight = (id: string) => unavailable(`trace ${id} is being written by an earlier request; retry`, IN_FLIGHT_RETRY_SECONDS);

export const quotaExceeded = (quota: number | null) =>
  new AppError(402, 'trace_quota_exceeded', `monthly trace quota of ${quota} traces is exhausted`, { required_plan: 'pro' });

function failedItem(index: number, id: string | null, status: number, code: string, error: string): BatchItemResult {
  return { index, id, status, code, error };
}

export class IngestService {
  constructor(
    private readonly registry: TraceRegistry,
    private readonly projects: ProjectService,
    private readonly writes: TraceWritePath,
    private readonly prices: PriceBook,
    private readonly dimensions: VectorDimensions,
  ) {}

  /** POST /v1/ingest: one trace, answered only after its rows are committed in ClickHouse. */
  async ingestOne(auth: AuthContext, body: TraceInput): Promise<{ id: string; span_count: number }> {
    const project = await this.projects.resolveForIngest(auth.tenantId, body.project_id, auth.defaultProjectId);
    const now = Date.now();
    const normalized = normalizeTrace(body, { tenantId: auth.tenantId, projectId: project.id, prices: await this.prices.forTenant(auth.tenantId), now });
    if (Array.isArray(normalized)) throw this.invalid(normalized);
    const [mismatch] = await this.dimensions.check(auth.tenantId, project.id, [normalized.spans]);
    if (mismatch) throw mismatch;
    const reservation = await this.reserve(auth, project.id, [normalized], new Date(now));
    if (reservation.duplicates.length > 0) throw new AppError(409, 'trace_exists', `trace ${normalized.trace.id} already exists`);
    if (reservation.inFlight.length > 0) throw inFlight(normalized.trace.id);
    if (reservation.overQuota.length > 0) throw quotaExceeded(PLANS[auth.plan].tracesPerMonth);
    await this.commit(auth.tenantId, [normalized]);
    return { id: normalized.trace.id, span_count: normalized.spans.length };
  }

  /** POST /v1/ingest/batch: every item validated and reserved on its own; one group commit for all. */
  async ingestBatch(auth: AuthContext, items: readonly unknown[]): Promise<{ status: number; results: BatchItemResult[]; retryAfterSeconds?: number }> {
    const results: BatchItemResult[] = new Array(items.length);
    const now = Date.now();
    const prices = await this.prices.forTenant(auth.tenantId);
    const byProject = new Map<string, Candidate[]>();
    const projectErrors = new Map<string, AppError>();

    for (const [index, raw] of items.entries()) {
      const parsed = traceInput.safeParse(raw);
      if (!parsed.success) {
        const { missing, problems } = describeIssues(parsed.error.issues, raw, `body.traces.${index}`);
        const message = problems.map((p) => `${p.path}: ${p.message}`).join('; ');
        results[index] = failedItem(index, null, missing ? 422 : 400, missing ? 'validation_error' : 'bad_request', message);
        continue;
      }
      const projectKey = parsed.data.project_id ?? auth.defaultProjectId ?? '';
      if (!projectErrors.has(projectKey) && !byProject.has(projectKey)) {
        try {
          await this.projects.resolveForIngest(auth.tenantId, parsed.data.project_id, auth.defaultProjectId);
          byProject.set(projectKey, []);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          projectErrors.set(projectKey, err);
        }
      }
      const projectError = projectErrors.get(projectKey);
      if (projectError) {
        results[index] = failedItem(index, parsed.data.id ?? null, projectError.status, projectError.code, projectError.message);
        continue;
      }
      const normalized = normalizeTrace(parsed.data, { tenantId: auth.tenantId, projectId: projectKey, prices, now });
      if (Array.isArray(normalized)) {
        const message = normalized.map((p) => `body.traces.${index}.${p.path}: ${p.message}`).join('; ');
        results[index] = failedItem(index, parsed.data.id ?? null, 400, 'bad_request', message);
        continue;
      }
      byProject.get(projectKey)!.push({ index, normalized });
    }

    const accepted: Candidate[] = [];
    for (const [projectId, candidates] of byProject) {
      const seen = new Set<string>();
      const deduplicated = candidates.filter((c) => {
        const dup = seen.has(c.normalized.trace.id);
        seen.add(c.normalized.trace.id);
        if (dup) results[c.index] = failedItem(c.index, c.normalized.trace.id, 409, 'trace_exists', 'trace id repeated in this batch');
        return !dup;
      });
      const mismatches = await this.dimensions.check(auth.tenantId, projectId, deduplicated.map((c) => c.normalized.spans));
      const unique = deduplicated.filter((c, i) => {
        const err = mismatches[i];
        if (err) results[c.index] = failedItem(c.index, c.normalized.trace.id, err.status, err.code, `body.traces.${c.index}.${err.message}`);
        return !err;
      });
      if (unique.length === 0) continue;
      const reservation = await this.reserve(auth, projectId, unique.map((c) => c.normalized), new Date(now));
      const duplicates = new Set(reservation.duplicates);
      const inFlightIds = new Set(reservation.inFlight);
      const overQuota = new Set(reservation.overQuota);
      for (const c of unique) {
        const id = c.normalized.trace.id;
        if (duplicates.has(id)) results[c.index] = failedItem(c.index, id, 409, 'trace_exists', `trace ${id} already exists`);
        else if (inFlightIds.has(id)) {
          const err = inFlight(id);
          results[c.index] = failedItem(c.index, id, err.status, err.code, err.message);
        } else if (overQuota.has(id)) {
          const err = quotaExceeded(PLANS[auth.plan].tracesPerMonth);
          results[c.index] = failedItem(c.index, id, err.status, err.code, err.message);
        } else accepted.push(c);
      }
    }

    if (accepted.length > 0) {
      await this.commit(auth.tenantId, accepted.map((c) => c.normalized));
      for (const c of accepted) results[c.index] = { index: c.index, id: c.normalized.trace.id, status: 201 };
    }
    const retryable = results.some((r) => r.status === 503);
    return { status: batchStatus(results), results, ...(retryable ? { retryAfterSeconds: IN_FLIGHT_RETRY_SECONDS } : {}) };
  }

  private invalid(problems: FieldProblem[]): AppError {
    return new AppError(400, 'bad_request', problems.map((p) => `body.${p.path}: ${p.message}`).join('; '), {
      details: problems.map((p) => ({ path: `body.${p.path}`, message: p.message })),
    });
  }

  private reserve(auth: AuthContext, projectId: string, traces: readonly NormalizedTrace[], now: Date): Promise<NativeReservation> {
    const entries = traces.map((t) => ({ traceId: t.trace.id, startedAtMs: t.startedAtMs }));
    return this.registry.reserveNative(auth.tenantId, projectId, entries, PLANS[auth.plan].tracesPerMonth, now);
  }

  private commit(tenantId: string, traces: readonly NormalizedTrace[]): Promise<void> {
    return this.writes.commit({
      tenantId,
      traces: traces.map((t) => t.trace),
      spans: traces.flatMap((t) => t.spans),
      registrations: traces.map((t) => ({ tenantId, traceId: t.trace.id, projectId: t.trace.project_id, startedAtMs: t.startedAtMs, source: 'native' as const })),
      reservedIds: traces.map((t) => t.trace.id),
    });
  }
}

/** 201 all created, 409 all duplicates, one shared failure status when all failed alike, else 207. */
export function batchStatus(results: readonly BatchItemResult[]): number {
  const statuses = new Set(results.map((r) => r.status));
  if (statuses.size === 1) return results[0]!.status;
  return 207;
}

import type { AuthContext } from '../../platform/auth.js';
import { AppError, unavailable } from '../../platform/errors.js';
import { describeIssues, type FieldProblem } from '../../platform/http-errors.js';
import { PLANS } from '../../platform/plans.js';
import type { ProjectService } from '../projects/service.js';
import type { VectorDimensions } from '../search/service.js';
import { normalizeTrace, type NormalizedTrace } from './normalize.js';
import type { PriceBook } from '../pricing/service.js';
import type { NativeReservation, TraceRegistry } from './registry-service.js';
import { traceInput, type BatchItemResult, type TraceInput } from './schemas.js';
import type { IngestCounters } from './stats/counters.js';
import { IngestTally, type Part } from './stats/tally.js';
import type { RefusalReason, StoredCount } from './stats/types.js';
import type { TraceWritePath } from './write-path.js';

// The module's secondary services and helpers that other modules use: this file is its public face.
export type { TraceRegistry } from './registry-service.js';

interface Candidate {
  index: number;
  normalized: NormalizedTrace;
  /** Its counts (GET /v1/ingest/stats). */
  part: Part;
}

/** The spans of a body that may not have validated: an array's length, else none. */
const spansIn = (body: unknown): number => {
  const spans = body !== null && typeof body === 'object' ? (body as { spans?: unknown }).spans : undefined;
  return Array.isArray(spans) ? spans.length : 0;
};

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
    private readonly counters: IngestCounters,
  ) {}

  /**
   * A request refused before it reached a handler, after its body was decoded (it failed the route's
   * schema): its traces and spans are received and refused as invalid, under the API key's project.
   */
  countInvalidBody(auth: AuthContext, body: unknown, shape: 'trace' | 'batch'): void {
    const tally = new IngestTally(this.counters, auth.tenantId, 'native', Date.now());
    const traces = shape === 'trace' ? [body] : (body as { traces?: unknown } | null)?.traces;
    for (const trace of Array.isArray(traces) ? traces : []) tally.refuse(auth.defaultProjectId, 'validation', 1, spansIn(trace));
    tally.close();
  }

  /** POST /v1/ingest: one trace, answered only after its rows are committed in ClickHouse. */
  async ingestOne(auth: AuthContext, body: TraceInput): Promise<{ id: string; span_count: number }> {
    const now = Date.now();
    const tally = new IngestTally(this.counters, auth.tenantId, 'native', now);
    const part = tally.part(body.project_id ?? auth.defaultProjectId, 1, body.spans.length);
    return tally.run(async () => {
      const project = await this.resolve(auth, body.project_id, tally, [part]);
      part.projectId = project.id;
      const normalized = normalizeTrace(body, { tenantId: auth.tenantId, projectId: project.id, prices: await this.prices.forTenant(auth.tenantId), now });
      if (Array.isArray(normalized)) throw this.invalid(normalized);
      const [mismatch] = await this.dimensions.check(auth.tenantId, project.id, [normalized.spans]);
      if (mismatch) throw mismatch;
      const reservation = await this.reserve(auth, project.id, [normalized], new Date(now));
      if (reservation.duplicates.length > 0) throw new AppError(409, 'trace_exists', `trace ${normalized.trace.id} already exists`);
      if (reservation.inFlight.length > 0) {
        part.outcome = { kind: 'refused', reason: 'in_flight' };
        throw inFlight(normalized.trace.id);
      }
      if (reservation.overQuota.length > 0) {
        part.outcome = { kind: 'quota' };
        throw quotaExceeded(PLANS[auth.plan].tracesPerMonth);
      }
      await this.commit(auth.tenantId, [normalized], tally.hand([part]));
      return { id: normalized.trace.id, span_count: normalized.spans.length };
    });
  }

  /** POST /v1/ingest/batch: every item validated and reserved on its own; one group commit for all. */
  async ingestBatch(auth: AuthContext, items: readonly unknown[]): Promise<{ status: number; results: BatchItemResult[]; retryAfterSeconds?: number }> {
    const now = Date.now();
    const tally = new IngestTally(this.counters, auth.tenantId, 'native', now);
    return tally.run(() => this.batch(auth, items, tally, now));
  }

  private async batch(auth: AuthContext, items: readonly unknown[], tally: IngestTally, now: number) {
    const results: BatchItemResult[] = new Array(items.length);
    // Every item is received; until an item is decided, its part stays open (the request's failure decides it).
    const parts = items.map((raw) => tally.part(auth.defaultProjectId, 1, spansIn(raw)));
    const refuse = (index: number, result: BatchItemResult, reason: Part['outcome']) => {
      results[index] = result;
      parts[index]!.outcome = reason;
    };
    const prices = await this.prices.forTenant(auth.tenantId);
    const byProject = new Map<string, Candidate[]>();
    const projectErrors = new Map<string, AppError>();

    for (const [index, raw] of items.entries()) {
      const parsed = traceInput.safeParse(raw);
      if (!parsed.success) {
        const { missing, problems } = describeIssues(parsed.error.issues, raw, `body.traces.${index}`);
        const message = problems.map((p) => `${p.path}: ${p.message}`).join('; ');
        refuse(index, failedItem(index, null, missing ? 422 : 400, missing ? 'validation_error' : 'bad_request', message), refused('validation'));
        continue;
      }
      const projectKey = parsed.data.project_id ?? auth.defaultProjectId ?? '';
      parts[index]!.projectId = projectKey || null;
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
        tally.refuseForProject([parts[index]!], projectError);
        continue;
      }
      const normalized = normalizeTrace(parsed.data, { tenantId: auth.tenantId, projectId: projectKey, prices, now });
      if (Array.isArray(normalized)) {
        const message = normalized.map((p) => `body.traces.${index}.${p.path}: ${p.message}`).join('; ');
        refuse(index, failedItem(index, parsed.data.id ?? null, 400, 'bad_request', message), refused('validation'));
        continue;
      }
      byProject.get(projectKey)!.push({ index, normalized, part: parts[index]! });
    }

    const accepted: Candidate[] = [];
    for (const [projectId, candidates] of byProject) {
      const seen = new Set<string>();
      const deduplicated = candidates.filter((c) => {
        const dup = seen.has(c.normalized.trace.id);
        seen.add(c.normalized.trace.id);
        if (dup) refuse(c.index, failedItem(c.index, c.normalized.trace.id, 409, 'trace_exists', 'trace id repeated in this batch'), refused('duplicate'));
        return !dup;
      });
      const mismatches = await this.dimensions.check(auth.tenantId, projectId, deduplicated.map((c) => c.normalized.spans));
      const unique = deduplicated.filter((c, i) => {
        const err = mismatches[i];
        if (err) refuse(c.index, failedItem(c.index, c.normalized.trace.id, err.status, err.code, `body.traces.${c.index}.${err.message}`), refused('embedding_dimension'));
        return !err;
      });
      if (unique.length === 0) continue;
      const reservation = await this.reserve(auth, projectId, unique.map((c) => c.normalized), new Date(now));
      const duplicates = new Set(reservation.duplicates);
      const inFlightIds = new Set(reservation.inFlight);
      const overQuota = new Set(reservation.overQuota);
      for (const c of unique) {
        const id = c.normalized.trace.id;
        if (duplicates.has(id)) refuse(c.index, failedItem(c.index, id, 409, 'trace_exists', `trace ${id} already exists`), refused('duplicate'));
        else if (inFlightIds.has(id)) {
          const err = inFlight(id);
          refuse(c.index, failedItem(c.index, id, err.status, err.code, err.message), refused('in_flight'));
        } else if (overQuota.has(id)) {
          const err = quotaExceeded(PLANS[auth.plan].tracesPerMonth);
          refuse(c.index, failedItem(c.index, id, err.status, err.code, err.message), { kind: 'quota' });
        } else accepted.push(c);
      }
    }

    if (accepted.length > 0) {
      await this.commit(auth.tenantId, accepted.map((c) => c.normalized), tally.hand(accepted.map((c) => c.part)));
      for (const c of accepted) results[c.index] = { index: c.index, id: c.normalized.trace.id, status: 201 };
    }
    const retryable = results.some((r) => r.status === 503);
    return { status: batchStatus(results), results, ...(retryable ? { retryAfterSeconds: IN_FLIGHT_RETRY_SECONDS } : {}) };
  }

  /** The request's project; a refusal decides `parts` (project_not_found, project_archived, validation). */
  private async resolve(auth: AuthContext, requested: string | undefined, tally: IngestTally, parts: readonly Part[]) {
    try {
      return await this.projects.resolveForIngest(auth.tenantId, requested, auth.defaultProjectId);
    } catch (err) {
      tally.refuseForProject(parts, err);
      throw err;
    }
  }

  private invalid(problems: FieldProblem[]): AppError {
    return new AppError(400, 'bad_request', problems.map((p) => `body.${p.path}: ${p.message}`).join('; '), {
      details: problems.map((p) => ({ path: `body.${p.path}`, message: p.message })),
    });
  }

  private reserve(auth: AuthContext, projectId: string, traces: readonly NormalizedTrace[], now: Date): Promise<NativeReservation> {
    const entries = traces.map((t) => ({ traceId: t.trace.id, startedAtMs: t.startedAtMs, spans: t.spans.length }));
    return this.registry.reserveNative(auth.tenantId, projectId, entries, PLANS[auth.plan].tracesPerMonth, now);
  }

  private commit(tenantId: string, traces: readonly NormalizedTrace[], stored: readonly StoredCount[]): Promise<void> {
    return this.writes.commit({
      stored,
      tenantId,
      traces: traces.map((t) => t.trace),
      spans: traces.flatMap((t) => t.spans),
      registrations: traces.map((t) => ({ tenantId, traceId: t.trace.id, projectId: t.trace.project_id, startedAtMs: t.startedAtMs, source: 'native' as const })),
      reservedIds: traces.map((t) => t.trace.id),
    });
  }
}

const refused = (reason: RefusalReason): Part['outcome'] => ({ kind: 'refused', reason });

/** 201 all created, 409 all duplicates, one shared failure status when all failed alike, else 207. */
export function batchStatus(results: readonly BatchItemResult[]): number {
  const statuses = new Set(results.map((r) => r.status));
  if (statuses.size === 1) return results[0]!.status;
  return 207;
}

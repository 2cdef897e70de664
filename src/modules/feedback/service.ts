import { createHash } from 'node:crypto';
import { z } from 'zod';
import { decodeCursor, toPage } from '../../platform/cursor.js';
import { AppError, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { ceilMillis, floorMillis, isoToNanos } from '../../platform/time.js';
import type { TraceService } from '../traces/service.js';
import type { FeedbackFilter, FeedbackPosition, FeedbackRepository, FeedbackRow } from './repo.js';
import { BAD_UP_TO, GOOD_FROM, type CreateFeedback, type Feedback, type FeedbackLabel, type ListFeedbackQuery } from './schemas.js';

export function labelFor(score: number): FeedbackLabel {
  if (score >= GOOD_FROM) return 'good';
  if (score <= BAD_UP_TO) return 'bad';
  return 'neutral';
}

function toFeedback(row: FeedbackRow): Feedback {
  return { ...row, created_at: row.created_at.toISOString() };
}

// t: epoch ms of a stored created_at (never before 1970); f: digest of the listing's filters.
const feedbackCursor = z.object({ t: z.number().int().min(0).max(8.64e15), i: z.guid(), f: z.string().max(64) });

/** The filters of a listing, with from/to narrowed to the whole milliseconds created_at can hold. */
function filterOf(query: ListFeedbackQuery): FeedbackFilter {
  return {
    projectId: query.project_id ?? null,
    traceId: query.trace_id ?? null,
    label: query.label ?? null,
    fromMs: query.from === undefined ? null : ceilMillis(isoToNanos(query.from)),
    toMs: query.to === undefined ? null : floorMillis(isoToNanos(query.to)),
  };
}

/** Of the normalized filters, so equal bounds written differently (…Z, +00:00) continue one listing. */
function fingerprintOf(filter: FeedbackFilter): string {
  const canonical = [filter.projectId, filter.traceId, filter.label, filter.fromMs, filter.toMs];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('base64url').slice(0, 16);
}

/** A cursor continues only the listing that issued it: other filters would skip or repeat rows. */
function decodePosition(cursor: string, fingerprint: string): FeedbackPosition {
  const c = decodeCursor(cursor, feedbackCursor);
  if (c.f !== fingerprint) {
    throw new AppError(400, 'invalid_cursor', 'cursor belongs to a listing with other filters; start again without it');
  }
  return { createdAtMs: c.t, id: c.i };
}

export class FeedbackService {
  constructor(
    private readonly repo: FeedbackRepository,
    private readonly traces: Pick<TraceService, 'locate'>,
  ) {}

  /** Feedback on a trace of the tenant; another tenant's trace is simply not found. */
  async create(tenantId: string, createdBy: string, body: CreateFeedback): Promise<Feedback> {
    const location = await this.traces.locate(tenantId, body.trace_id);
    if (!location) throw notFound('trace');
    const row = await this.repo.insert(tenantId, {
      id: newId(),
      project_id: location.projectId,
      trace_id: body.trace_id,
      score: body.score,
      label: body.label ?? labelFor(body.score),
      comment: body.comment ?? null,
      metadata: body.metadata ?? {},
      created_by: createdBy,
    });
    return toFeedback(row);
  }

  /** Data-subject requests (src/modules/privacy): the feedback on these traces, oldest first. */
  async forTraces(tenantId: string, traceIds: readonly string[]): Promise<Feedback[]> {
    if (traceIds.length === 0) return [];
    return (await this.repo.ofTraces(tenantId, traceIds)).map(toFeedback);
  }

  async countForTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return traceIds.length === 0 ? 0 : this.repo.countOfTraces(tenantId, traceIds);
  }

  /** Data-subject erasure: the feedback on these traces (scores, comments, metadata). Idempotent. */
  async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return traceIds.length === 0 ? 0 : this.repo.eraseTraces(tenantId, traceIds);
  }

  /** GET /v1/feedback: newest first (created_at desc, id desc), keyset-paginated. */
  async list(tenantId: string, query: ListFeedbackQuery) {
    const filter = filterOf(query);
    const fingerprint = fingerprintOf(filter);
    const after = query.cursor ? decodePosition(query.cursor, fingerprint) : null;
    const rows = await this.repo.list(tenantId, filter, after, query.limit + 1);
    const page = toPage(rows, query.limit, (last) => ({ t: last.created_at.getTime(), i: last.id, f: fingerprint }));
    return { feedback: page.items.map(toFeedback), has_more: page.has_more, next_cursor: page.next_cursor };
  }
}

import { createHmac } from 'node:crypto';
import { Readable } from 'node:stream';
import { z } from 'zod';
import type { AuditEntry } from '../../platform/audit/chain.js';
import { decodeCursor, toPage } from '../../platform/cursor.js';
import { AppError, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { toIso } from '../../platform/schemas.js';
import type { AppLogger } from '../../platform/log.js';
import type { SubjectErasure } from './erasure.js';
import type { SubjectExport } from './export.js';
import type { RequestRepository, RequestRow } from './repo.js';
import {
  EXPORT_TTL_MS,
  subjectOf,
  ZERO_COUNTS,
  type CreateRequest,
  type DataSubjectRequest,
  type ListRequestsQuery,
  type RequestCounts,
} from './schemas.js';

/** A queued request nobody took within this is queued again (its job was lost, or Redis was away). */
const QUEUED_GRACE_MS = 30_000;
/** A running request whose worker has not beaten for this long is taken over. */
const STALE_AFTER_MS = 5 * 60_000;
const HEARTBEAT_MS = 30_000;
/** Attempts over all jobs of a request (retries and re-queues) before it is failed. */
export const MAX_ATTEMPTS = 5;

export type AuditSink = (tenantId: string, entry: AuditEntry) => Promise<unknown>;
export type RequestQueue = (tenantId: string, requestId: string) => Promise<void>;

const listCursor = z.object({ id: z.guid() });

export function toRequest(row: RequestRow): DataSubjectRequest {
  const downloadable = row.type === 'export' && row.status === 'completed';
  return {
    id: row.id,
    type: row.type,
    subject_kind: row.subject_kind,
    status: row.status,
    counts: { ...ZERO_COUNTS, ...row.counts },
    error: row.error,
    created_at: row.created_at.toISOString(),
    completed_at: toIso(row.completed_at),
    download_url: downloadable ? `/v1/data-subject-requests/${row.id}/download` : null,
    expires_at: toIso(row.expires_at),
  };
}

/**
 * Data-subject requests: an owner asks for one end user's data to be exported or erased across
 * ClickHouse and Postgres. The request row is the truth; the `data-subject-requests` job does the
 * work (SubjectErasure, SubjectExport), and the reconcile job re-queues what lost its job.
 */
export class DataSubjectRequestService {
  constructor(
    private readonly repo: RequestRepository,
    private readonly erasure: SubjectErasure,
    private readonly exporter: SubjectExport,
    private readonly queue: RequestQueue,
    private readonly audit: AuditSink,
    private readonly secretKey: Buffer,
    private readonly log: AppLogger,
  ) {}

  /** Stored queued (with the subject's raw value, until processed), then queued. */
  async create(tenantId: string, requestedBy: string, body: CreateRequest): Promise<DataSubjectRequest> {
    const subject = subjectOf(body);
    const row = await this.repo.insert({
      id: newId(),
      tenant_id: tenantId,
      type: body.type,
      subject_kind: subject.kind,
      subject_hash: this.subjectHash(tenantId, subject.kind, subject.value),
      subject_value: subject.value,
      requested_by: requestedBy,
    });
    // Stored before queued: should Redis refuse, the reconcile job queues it within a minute.
    await this.queue(tenantId, row.id).catch((err: unknown) => this.log.warn({ err, request: row.id }, 'data-subject request not queued; the reconcile will'));
    return toRequest(row);
  }

  async get(tenantId: string, id: string): Promise<DataSubjectRequest> {
    return toRequest(await this.row(tenantId, id));
  }

  /** Newest first. */
  async list(tenantId: string, query: ListRequestsQuery) {
    const before = query.cursor ? decodeCursor(query.cursor, listCursor).id : null;
    const page = toPage(await this.repo.list(tenantId, before, query.limit + 1), query.limit, (last) => ({ id: last.id }));
    return { requests: page.items.map(toRequest), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  /** Requests still queued or running, oldest first (the compliance report lists them). */
  async open(tenantId: string): Promise<Pick<RequestRow, 'id' | 'type' | 'status' | 'created_at'>[]> {
    return this.repo.open(tenantId);
  }

  /**
   * A completed export's file, chunk by chunk as the client reads. Refused before the first byte:
   * another kind of request, one not completed, one whose file has expired (410).
   */
  async download(tenantId: string, id: string): Promise<Readable> {
    const row = await this.row(tenantId, id);
    if (row.type !== 'export') throw new AppError(409, 'data_subject_request.not_export', 'only an export has a file to download');
    if (row.status !== 'completed') throw new AppError(409, 'data_subject_request.not_ready', `the export is ${row.status}; its file exists once it is completed`);
    if (row.expires_at && row.expires_at.getTime() <= Date.now()) {
      throw new AppError(410, 'data_subject_request.export_expired', `the export's file expired at ${row.expires_at.toISOString()} and was deleted; request a new export`);
    }
    const repo = this.repo;
    return Readable.from(
      (async function* chunks() {
        for (let seq = 0; ; seq++) {
          const chunk = await repo.chunk(id, seq);
          if (chunk === undefined) return;
          yield Buffer.from(chunk, 'utf8');
        }
      })(),
      { objectMode: false },
    );
  }

  /**
   * The `data-subject-requests` job: runs one request, unless another worker holds it or it is
   * finished. A failed attempt gives the request back and throws (the job retries with backoff);
   * the MAX_ATTEMPTS-th fails it for good and is acknowledged.
   */
  async process(requestId: string): Promise<'completed' | 'failed' | 'skipped'> {
    const row = await this.repo.claim(requestId, new Date(Date.now() - STALE_AFTER_MS));
    if (!row) return 'skipped';
    const heartbeat = setInterval(() => {
      this.repo.heartbeat(row.id).catch((err: unknown) => this.log.warn({ err, request: row.id }, 'data-subject request heartbeat failed'));
    }, HEARTBEAT_MS);
    try {
      const subject = { kind: row.subject_kind, value: row.subject_value! };
      const counts = row.type === 'erasure' ? await this.erasure.run(row, subject) : await this.exporter.run(row, subject);
      const done = await this.repo.complete(row.id, counts, row.type === 'export' ? EXPORT_TTL_MS : null);
      if (done) await this.record(done, 'data_subject_request.completed', counts);
      return 'completed';
    } catch (err) {
      if (row.attempts < MAX_ATTEMPTS) {
        await this.repo.release(row.id).catch(() => {});
        throw err;
      }
      this.log.warn({ err, request: row.id }, 'data-subject request failed for good');
      // The message names the stage, never the subject or anything found of it.
      const failed = await this.repo.fail(row.id, `processing failed after ${row.attempts} attempts; the operator's worker log has the cause (request ${row.id})`);
      if (failed) await this.record(failed, 'data_subject_request.failed', null);
      return 'failed';
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** The reconcile job: re-queues lost or abandoned requests, deletes expired export files. */
  async reconcile(): Promise<{ requeued: number; expired_exports: number }> {
    const stranded = await this.repo.stranded(new Date(Date.now() - QUEUED_GRACE_MS), new Date(Date.now() - STALE_AFTER_MS), 100);
    for (const s of stranded) await this.queue(s.tenant_id, s.id);
    return { requeued: stranded.length, expired_exports: await this.repo.dropExpiredExports() };
  }

  /** The job's outcome joins the tenant's audit chain: kinds and counts, never the subject nor anything of it. */
  private async record(row: RequestRow, action: string, counts: RequestCounts | null): Promise<void> {
    await this.audit(row.tenant_id, {
      actorType: 'system',
      actorId: null,
      action,
      resourceType: 'data_subject_request',
      resourceId: row.id,
      requestId: null,
      details: { type: row.type, subject_kind: row.subject_kind, ...(counts ? { counts } : {}) },
    }).catch((err: unknown) => this.log.warn({ err, request: row.id }, 'data-subject request outcome not audited'));
  }

  /** Keyed, so that a short identifier cannot be recovered from the stored hash by trying values. */
  private subjectHash(tenantId: string, kind: string, value: string): string {
    return createHmac('sha256', this.secretKey).update(`data-subject\n${tenantId}\n${kind}\n${value}`).digest('hex');
  }

  private async row(tenantId: string, id: string): Promise<RequestRow> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw notFound('data-subject request');
    return row;
  }
}

import { z } from 'zod';
import { decodeCursor, filterFingerprint, toPage } from '../../platform/cursor.js';
import { AppError, notFound } from '../../platform/errors.js';
import { toIso } from '../../platform/schemas.js';
import type { DlqRepository, DlqRow } from './repo.js';
import type { DlqEntry, ListDlqQuery } from './schemas.js';

// The module's secondary services and helpers that other modules use: this file is its public face.
export type { DeadLetterWriter } from './dead-letter-service.js';

const listCursor = z.object({ id: z.guid(), f: z.string() });

function summaryOf(row: DlqRow): string {
  if (row.kind === 'webhook_delivery') {
    const event = row.payload.event as { type?: unknown } | undefined;
    return `${typeof event?.type === 'string' ? event.type : 'event'} to webhook ${String(row.payload.webhook_id)}`;
  }
  return row.kind;
}

const toEntry = (row: DlqRow): DlqEntry => ({
  id: row.id,
  kind: row.kind,
  ref_id: row.ref_id,
  summary: summaryOf(row),
  payload: row.payload,
  attempts: row.attempts,
  last_error: row.last_error,
  created_at: row.created_at.toISOString(),
  resolved_at: toIso(row.resolved_at),
  resolution: row.resolution,
});

/**
 * How a retry hands a webhook delivery's dead letter back to its module (WebhookService.redeliver,
 * wired by src/services.ts): false when the dispatch is not dead-lettered. Declared here so that
 * dlq, which webhooks writes its dead letters through, does not import webhooks back.
 */
export interface WebhookRedelivery {
  redeliver(tenantId: string, dispatchId: string, retryKey: string): Promise<boolean>;
}

/** Final failures of background work: listed for everyone, retried or discarded by owners. */
export class DlqService {
  constructor(
    private readonly repo: DlqRepository,
    private readonly webhooks: WebhookRedelivery,
  ) {}

  async list(tenantId: string, query: ListDlqQuery) {
    const fingerprint = filterFingerprint(query);
    const before = query.cursor ? decodeCursor(query.cursor, listCursor.extend({ f: z.literal(fingerprint) })).id : null;
    const page = toPage(await this.repo.list(tenantId, query, before), query.limit, (last) => ({ id: last.id, f: fingerprint }));
    return { entries: page.items.map(toEntry), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async get(tenantId: string, id: string): Promise<DlqEntry> {
    return toEntry(await this.open(tenantId, id, false));
  }

  /** Runs the failed work again from the start (its whole retry schedule); the entry is resolved `retried`. */
  async retry(tenantId: string, id: string): Promise<DlqEntry> {
    const row = await this.open(tenantId, id, true);
    const restarted = row.kind === 'webhook_delivery' && (await this.webhooks.redeliver(tenantId, row.ref_id, row.id));
    if (!restarted) {
      throw new AppError(409, 'dlq.not_retryable', 'this entry can no longer be retried (its webhook was deleted, or the delivery is already running); discard it');
    }
    return this.close(tenantId, id, 'retried');
  }

  async discard(tenantId: string, id: string): Promise<DlqEntry> {
    await this.open(tenantId, id, true);
    return this.close(tenantId, id, 'discarded');
  }

  private async open(tenantId: string, id: string, mustBeOpen: boolean): Promise<DlqRow> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw notFound('DLQ entry');
    if (mustBeOpen && row.resolved_at) throw new AppError(409, 'dlq.resolved', `this entry was already ${row.resolution}`);
    return row;
  }

  private async close(tenantId: string, id: string, resolution: 'retried' | 'discarded'): Promise<DlqEntry> {
    const row = await this.repo.resolve(tenantId, id, resolution);
    if (!row) throw new AppError(409, 'dlq.resolved', 'this entry was resolved meanwhile');
    return toEntry(row);
  }
}

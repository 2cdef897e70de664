import { z } from 'zod';
import type { Config } from '../../config.js';
import type { JobEnqueuer } from '../../jobs/enqueue.js';
import { decodeCursor, toPage } from '../../platform/cursor.js';
import { checkSealedSecrets, decryptSecret, encryptSecret, type SealedSecretsCheck } from '../../platform/crypto.js';
import { AppError, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { checkOutboundUrl, UnsafeUrlError, type GuardOptions } from '../../platform/ssrf.js';
import type { TxSql } from '../../stores/pg.js';
import type { AppLogger } from '../../platform/log.js';
import type { TenantService } from '../tenants/service.js';
import { WebhookSender } from './delivery.js';
import { WebhookDispatcher, type DeliveryOutcome, type WebhookEventInput } from './dispatch.js';
import type { DeliveryRow, WebhookRepository, WebhookRow } from './repo.js';
import { WEBHOOK_EVENT_TYPES, type CreateWebhook, type Delivery, type UpdateWebhook, type Webhook, type WebhookDeliveryJob, type WebhookTestResult } from './schemas.js';

const listCursor = z.object({ id: z.guid() });

function toWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: row.events.filter((e): e is Webhook['events'][number] => (WEBHOOK_EVENT_TYPES as readonly string[]).includes(e)),
    enabled: row.enabled,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    created_by: row.created_by,
  };
}

const toDelivery = (row: DeliveryRow): Delivery => ({ ...row, created_at: row.created_at.toISOString() });

const urlError = (err: UnsafeUrlError) => new AppError(422, `webhook.url.${err.reason}`, `url: ${err.message}`);

/**
 * Tenants' webhooks (https receivers with a signing secret), their test pings and delivery log,
 * and the entry points of delivery (WebhookDispatcher): `emit` for other modules, `deliver` and
 * `reconcile` for the workers.
 */
export class WebhookService {
  private readonly guard: GuardOptions;
  private readonly sender: WebhookSender;
  private readonly dispatcher: WebhookDispatcher;

  constructor(
    private readonly repo: WebhookRepository,
    tenants: Pick<TenantService, 'get'>,
    jobs: Pick<JobEnqueuer, 'add'>,
    config: Config['webhooks'],
    private readonly secretKey: Buffer,
    log: AppLogger,
  ) {
    this.guard = { requireHttps: true, allowLoopback: config.allowLoopback };
    this.sender = new WebhookSender(this.guard);
    this.dispatcher = new WebhookDispatcher(repo, tenants, jobs, this.sender, config, secretKey, log);
  }

  /**
   * Stores an event and queues its delivery to every enabled webhook of the tenant subscribed to
   * its type; answers the event id. With `tx`, nothing is delivered unless that transaction commits.
   */
  emit(tenantId: string, event: WebhookEventInput, tx?: TxSql): Promise<string> {
    return this.dispatcher.emit(tenantId, event, tx);
  }

  /** The `webhooks` processor: one attempt of one dispatch. */
  deliver(job: WebhookDeliveryJob): Promise<DeliveryOutcome> {
    return this.dispatcher.deliver(job);
  }

  /** A dead-lettered delivery tried again from the start (DLQ retry); false when it is not dead-lettered. */
  redeliver(tenantId: string, dispatchId: string, retryKey: string): Promise<boolean> {
    return this.dispatcher.redeliver(tenantId, dispatchId, retryKey);
  }

  /** The `webhooks-reconcile` processor. */
  reconcile(): Promise<{ queued: number }> {
    return this.dispatcher.reconcile();
  }

  async create(tenantId: string, input: CreateWebhook, createdBy: string | null): Promise<Webhook> {
    await this.checkUrl(input.url);
    const row = await this.repo.insert(tenantId, {
      id: newId(),
      url: input.url,
      secret_ciphertext: encryptSecret(this.secretKey, input.secret),
      events: input.events,
      enabled: input.enabled,
      created_by: createdBy,
    });
    return toWebhook(row);
  }

  async list(tenantId: string, limit: number, cursor: string | undefined) {
    const after = cursor ? decodeCursor(cursor, listCursor).id : null;
    const page = toPage(await this.repo.list(tenantId, after, limit + 1), limit, (last) => ({ id: last.id }));
    return { webhooks: page.items.map(toWebhook), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async get(tenantId: string, id: string): Promise<Webhook> {
    return toWebhook(await this.find(tenantId, id));
  }

  /** A new URL is checked like a new webhook; a new secret signs every later attempt, retries included. */
  async update(tenantId: string, id: string, patch: UpdateWebhook): Promise<Webhook> {
    if (patch.url !== undefined) await this.checkUrl(patch.url);
    const row = await this.repo.update(tenantId, id, {
      url: patch.url,
      secret_ciphertext: patch.secret === undefined ? undefined : encryptSecret(this.secretKey, patch.secret),
      events: patch.events,
      enabled: patch.enabled,
    });
    if (!row) throw notFound('webhook');
    return toWebhook(row);
  }

  /**
   * Data retention (src/modules/retention): the project's events created before `cutoff` (their
   * payloads describe traces that are gone), with their dispatches and delivery log, in batches of
   * `batch` events. A delivery still queued for one finds its dispatch gone and does nothing.
   */
  async expireBefore(tenantId: string, projectId: string, cutoff: Date, batch: number): Promise<{ events: number; deliveries: number }> {
    const total = { events: 0, deliveries: 0 };
    for (;;) {
      const removed = await this.repo.deleteEventsBefore(tenantId, projectId, cutoff, batch);
      total.events += removed.events;
      total.deliveries += removed.deliveries;
      if (removed.events < batch) return total;
    }
  }

  /** For the compliance report: the tenant's signing secrets, and whether each opens with the current key. */
  async sealedSecrets(tenantId: string): Promise<SealedSecretsCheck> {
    return checkSealedSecrets(this.secretKey, await this.repo.sealedSecrets(tenantId));
  }

  async remove(tenantId: string, id: string): Promise<void> {
    if (!(await this.repo.delete(tenantId, id))) throw notFound('webhook');
  }

  /** A signed `ping` to the stored URL, answered and forgotten (not in the delivery log). */
  async test(tenantId: string, id: string): Promise<WebhookTestResult> {
    const row = await this.find(tenantId, id);
    const ping = { id: newId(), type: 'ping', created_at: new Date().toISOString(), tenant_id: tenantId, project_id: null, data: { webhook_id: id } };
    try {
      const { status, body, error } = await this.sender.send(row.url, decryptSecret(this.secretKey, row.secret_ciphertext), ping, 1);
      return { status, body, error };
    } catch (err) {
      throw err instanceof UnsafeUrlError ? urlError(err) : err;
    }
  }

  async deliveries(tenantId: string, id: string, limit: number, cursor: string | undefined) {
    await this.find(tenantId, id);
    const before = cursor ? decodeCursor(cursor, listCursor).id : null;
    const page = toPage(await this.repo.deliveries(tenantId, id, before, limit + 1), limit, (last) => ({ id: last.id }));
    return { deliveries: page.items.map(toDelivery), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  private async find(tenantId: string, id: string): Promise<WebhookRow> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw notFound('webhook');
    return row;
  }

  private async checkUrl(url: string): Promise<void> {
    try {
      await checkOutboundUrl(url, this.guard);
    } catch (err) {
      throw err instanceof UnsafeUrlError ? urlError(err) : err;
    }
  }
}

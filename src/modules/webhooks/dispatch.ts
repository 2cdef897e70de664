import type { Config } from '../../config.js';
import type { JobEnqueuer } from '../../jobs/enqueue.js';
import { QUEUES } from '../../jobs/registry.js';
import { decryptSecret } from '../../platform/crypto.js';
import { newId } from '../../platform/ids.js';
import { planAtLeast } from '../../platform/plans.js';
import { UnsafeUrlError } from '../../platform/ssrf.js';
import type { TxSql } from '../../stores/pg.js';
import type { AppLogger } from '../../platform/log.js';
import type { TenantService } from '../tenants/service.js';
import { DELIVERY_TIMEOUT_MS, type SendOutcome, type WebhookSender } from './delivery.js';
import type { EventRow, WebhookRepository } from './repo.js';
import { WEBHOOK_EVENT_TYPES, type WebhookDeliveryJob, type WebhookPayload } from './schemas.js';

/** What other modules (failures, anomalies) hand to `emit`. */
export interface WebhookEventInput {
  type: string;
  project_id: string | null;
  data: Record<string, unknown>;
}

export type DeliveryOutcome = 'delivered' | 'failed' | 'skipped' | 'gone';

/** Thrown by a failed, not final, attempt so that BullMQ schedules the next one. */
export class DeliveryFailedError extends Error {
  override name = 'DeliveryFailedError';
}

const MAX_ATTEMPTS = QUEUES.webhooks.options.attempts;
const RECONCILE_BATCH = 500;

const toPayload = (e: EventRow): WebhookPayload => ({
  id: e.id,
  type: e.type,
  created_at: e.created_at.toISOString(),
  tenant_id: e.tenant_id,
  project_id: e.project_id,
  data: e.data,
});

/**
 * Events and their delivery, at least once: every (event, webhook) pair is a dispatch row
 * committed with the event, handed to the `webhooks` queue, retried with exponential backoff
 * (the processor is `deliver`), and dead-lettered after the last attempt.
 */
export class WebhookDispatcher {
  /** A pending dispatch untouched this long has lost its job: the longest backoff, a time-out, a minute. */
  private readonly staleAfterMs: number;

  constructor(
    private readonly repo: WebhookRepository,
    private readonly tenants: Pick<TenantService, 'get'>,
    private readonly jobs: Pick<JobEnqueuer, 'add'>,
    private readonly sender: WebhookSender,
    private readonly config: Config['webhooks'],
    private readonly secretKey: Buffer,
    private readonly log: AppLogger,
  ) {
    this.staleAfterMs = config.retryBaseMs * 2 ** (MAX_ATTEMPTS - 2) + DELIVERY_TIMEOUT_MS + 60_000;
  }

  /**
   * Stores an event and a pending dispatch for every enabled webhook of the tenant subscribed to
   * its type (none below the Pro plan); answers the event id. Inside the caller's `tx` nothing is
   * queued: the rows commit or roll back with the caller's work, and the webhooks-reconcile sweep
   * (every 2 s) queues them once committed. Without `tx` they are queued at once after the commit;
   * should Redis refuse, the sweep queues them later. Either way a committed event is delivered.
   */
  async emit(tenantId: string, event: WebhookEventInput, tx?: TxSql): Promise<string> {
    if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(event.type)) throw new Error(`unknown webhook event type ${event.type}`);
    const id = newId();
    const subscribed = planAtLeast((await this.tenants.get(tenantId)).plan, 'pro');
    const write = async (db: TxSql) => {
      const webhookIds = subscribed ? await this.repo.subscribers(db, tenantId, event.type) : [];
      const dispatches = webhookIds.map((webhookId) => ({ id: newId(), webhook_id: webhookId }));
      await this.repo.insertEvent(db, { id, tenant_id: tenantId, ...event }, dispatches);
      return dispatches.map((d) => ({ id: d.id, tenant_id: tenantId }));
    };
    if (tx) {
      await write(tx);
      return id;
    }
    const dispatches = await this.repo.begin(write);
    await this.enqueue(dispatches).catch((err: unknown) => this.log.warn({ err, event_id: id }, 'webhook deliveries not queued; the reconcile sweep will'));
    return id;
  }

  /** Queues dispatches never queued, and those whose job was lost (Redis outage or data loss). */
  async reconcile(): Promise<{ queued: number }> {
    const owed = await this.repo.owed(new Date(Date.now() - this.staleAfterMs), RECONCILE_BATCH);
    await this.enqueue(owed);
    return { queued: owed.length };
  }

  /**
   * One attempt of one dispatch: the `webhooks` processor. Each attempt is logged; a failure
   * before the last throws DeliveryFailedError (BullMQ retries), the last one dead-letters the
   * dispatch. A disabled or deleted webhook gets nothing.
   */
  async deliver(job: WebhookDeliveryJob): Promise<DeliveryOutcome> {
    const target = await this.repo.target(job.tenant_id, job.dispatch_id);
    if (!target || target.state !== 'pending') return 'gone';
    if (!target.webhook.enabled) {
      await this.repo.markSkipped(job.tenant_id, job.dispatch_id);
      return 'skipped';
    }
    const attempt = await this.repo.startAttempt(job.tenant_id, job.dispatch_id);
    if (attempt === undefined) return 'gone';
    const payload = toPayload(target.event);
    const result = await this.attempt(target.webhook.url, target.webhook.secret_ciphertext, payload, attempt);
    const delivered = result.status >= 200 && result.status < 300;
    const last = !delivered && attempt >= MAX_ATTEMPTS;
    const error = delivered ? null : (result.error ?? `HTTP ${result.status}${result.status >= 300 && result.status < 400 ? ' (redirects are not followed)' : ''}`);
    await this.repo.finishAttempt({
      id: newId(),
      tenantId: job.tenant_id,
      dispatchId: job.dispatch_id,
      webhookId: target.webhook.id,
      eventId: payload.id,
      attempt,
      status: result.status,
      durationMs: result.durationMs,
      error,
      outcome: delivered ? 'delivered' : last ? 'failed' : 'pending',
      ...(last ? { deadLetter: { id: newId(), payload: { webhook_id: target.webhook.id, event: payload } } } : {}),
    });
    if (delivered) return 'delivered';
    if (last) {
      this.log.warn({ tenant_id: job.tenant_id, webhook_id: target.webhook.id, event_id: payload.id, attempts: attempt, error }, 'webhook delivery dead-lettered');
      return 'failed';
    }
    throw new DeliveryFailedError(`attempt ${attempt} failed: ${error}`);
  }

  /** A refused URL or an unreadable secret is a failed attempt like any other (no HTTP answer). */
  private async attempt(url: string, secretCiphertext: string, payload: WebhookPayload, attempt: number): Promise<SendOutcome> {
    let secret: string;
    try {
      secret = decryptSecret(this.secretKey, secretCiphertext);
    } catch {
      return { status: 0, body: '', error: 'the webhook secret cannot be decrypted (was LOOPTRACE_SECRET_KEY changed?)', durationMs: 0 };
    }
    try {
      return await this.sender.send(url, secret, payload, attempt);
    } catch (err) {
      if (!(err instanceof UnsafeUrlError)) throw err;
      return { status: 0, body: '', error: `webhook.url.${err.reason}: ${err.message}`, durationMs: 0 };
    }
  }

  /**
   * A dead-lettered dispatch delivered again (a DLQ retry): pending with a fresh attempt count and
   * the full retry schedule. BullMQ keeps the finished job's id, so the new job is named after the
   * retry (`retryKey`, the DLQ entry) rather than the dispatch. False when it is not dead-lettered.
   */
  async redeliver(tenantId: string, dispatchId: string, retryKey: string): Promise<boolean> {
    if (!(await this.repo.reopenFailed(tenantId, dispatchId))) return false;
    await this.enqueue([{ id: dispatchId, tenant_id: tenantId }], `${dispatchId}-retry-${retryKey}`);
    return true;
  }

  /** Job id = dispatch id: a dispatch handed over twice (emitter and sweep) runs once. */
  private async enqueue(dispatches: readonly { id: string; tenant_id: string }[], jobId?: string): Promise<void> {
    const backoff = { type: 'exponential', delay: this.config.retryBaseMs };
    // A job that BullMQ gives up on (e.g. Postgres away for all its attempts) is removed, so that
    // the sweep can hand its still-pending dispatch over again under the same id.
    await Promise.all(
      dispatches.map((d) =>
        this.jobs.add('webhooks', { tenant_id: d.tenant_id, dispatch_id: d.id }, { jobId: jobId ?? d.id, removeOnFail: true, backoff }),
      ),
    );
    await this.repo.markQueued(dispatches.map((d) => d.id));
  }
}

import type postgres from 'postgres';
import type { Sql, TxSql } from '../../stores/pg.js';
import type { DeadLetterWriter } from '../dlq/service.js';

export interface WebhookRow {
  id: string;
  tenant_id: string;
  url: string;
  secret_ciphertext: string;
  events: string[];
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
  created_by: string | null;
}

export type NewWebhook = Pick<WebhookRow, 'id' | 'url' | 'secret_ciphertext' | 'events' | 'enabled' | 'created_by'>;
export type WebhookPatch = Partial<Pick<WebhookRow, 'url' | 'secret_ciphertext' | 'events' | 'enabled'>>;

export interface EventRow {
  id: string;
  tenant_id: string;
  project_id: string | null;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
}

/** A dispatch with what its delivery needs: the webhook as it is now and the event. */
export interface DispatchTarget {
  state: 'pending' | 'delivered' | 'failed' | 'skipped';
  webhook: Pick<WebhookRow, 'id' | 'url' | 'secret_ciphertext' | 'enabled'>;
  event: EventRow;
}

export interface AttemptRecord {
  id: string;
  tenantId: string;
  dispatchId: string;
  webhookId: string;
  eventId: string;
  attempt: number;
  status: number;
  durationMs: number;
  error: string | null;
  /** The dispatch's state afterwards; 'failed' also writes `deadLetter` to the DLQ. */
  outcome: 'delivered' | 'pending' | 'failed';
  deadLetter?: { id: string; payload: Record<string, unknown> };
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  status: number;
  duration_ms: number;
  error: string | null;
  created_at: Date;
}

/** `deadLetters`: the dlq module's table, written in the same transaction as a delivery's final failure or its event's retention. */
export function webhookRepository(sql: Sql, deadLetters: Pick<DeadLetterWriter, 'record' | 'removeFor'>) {
  return {
    async insert(tenantId: string, w: NewWebhook): Promise<WebhookRow> {
      const [row] = await sql<WebhookRow[]>`
        insert into webhooks (id, tenant_id, url, secret_ciphertext, events, enabled, created_by)
        values (${w.id}, ${tenantId}, ${w.url}, ${w.secret_ciphertext}, ${w.events}::text[], ${w.enabled}, ${w.created_by})
        returning *`;
      return row!;
    },

    async find(tenantId: string, id: string): Promise<WebhookRow | undefined> {
      const [row] = await sql<WebhookRow[]>`select * from webhooks where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    async sealedSecrets(tenantId: string): Promise<string[]> {
      const rows = await sql<{ secret_ciphertext: string }[]>`select secret_ciphertext from webhooks where tenant_id = ${tenantId}`;
      return rows.map((r) => r.secret_ciphertext);
    },

    async list(tenantId: string, afterId: string | null, limit: number): Promise<WebhookRow[]> {
      return sql<WebhookRow[]>`
        select * from webhooks
        where tenant_id = ${tenantId} ${afterId ? sql`and id > ${afterId}` : sql``}
        order by id
        limit ${limit}`;
    },

    async update(tenantId: string, id: string, patch: WebhookPatch): Promise<WebhookRow | undefined> {
      const [row] = await sql<WebhookRow[]>`
        update webhooks set
          url = coalesce(${patch.url ?? null}, url),
          secret_ciphertext = coalesce(${patch.secret_ciphertext ?? null}, secret_ciphertext),
          events = coalesce(${patch.events ?? null}::text[], events),
          enabled = coalesce(${patch.enabled ?? null}, enabled),
          updated_at = now()
        where tenant_id = ${tenantId} and id = ${id}
        returning *`;
      return row;
    },

    async delete(tenantId: string, id: string): Promise<boolean> {
      const rows = await sql`delete from webhooks where tenant_id = ${tenantId} and id = ${id} returning id`;
      return rows.length > 0;
    },

    /** Enabled webhooks of the tenant subscribed to `type`. */
    begin<T>(work: (tx: TxSql) => Promise<T>): Promise<T> {
      return sql.begin(work) as Promise<T>;
    },

    async subscribers(db: Sql | TxSql, tenantId: string, type: string): Promise<string[]> {
      const rows = await db<{ id: string }[]>`
        select id from webhooks where tenant_id = ${tenantId} and enabled and ${type} = any(events)`;
      return rows.map((r) => r.id);
    },

    /** Stores the event and its pending dispatches (ids chosen by the caller); answers its created_at. */
    async insertEvent(db: Sql | TxSql, event: Omit<EventRow, 'created_at'>, dispatches: readonly { id: string; webhook_id: string }[]): Promise<Date> {
      const [stored] = await db<{ created_at: Date }[]>`
        insert into webhook_events (id, tenant_id, project_id, type, data)
        values (${event.id}, ${event.tenant_id}, ${event.project_id}, ${event.type}, ${db.json(event.data as postgres.JSONValue)})
        returning created_at`;
      if (dispatches.length > 0) {
        const rows = dispatches.map((d) => ({ id: d.id, tenant_id: event.tenant_id, webhook_id: d.webhook_id, event_id: event.id }));
        await db`insert into webhook_dispatches ${db(rows)}`;
      }
      return stored!.created_at;
    },

    async markQueued(ids: readonly string[]): Promise<void> {
      if (ids.length === 0) return;
      await sql`update webhook_dispatches set queued_at = now(), updated_at = now() where id = any(${ids as string[]}::uuid[])`;
    },

    /** Pending dispatches never queued, or untouched since `staleBefore` (their job must be lost). */
    async owed(staleBefore: Date, limit: number): Promise<{ id: string; tenant_id: string }[]> {
      return sql<{ id: string; tenant_id: string }[]>`
        select id, tenant_id from webhook_dispatches
        where state = 'pending' and (queued_at is null or updated_at < ${staleBefore})
        order by updated_at
        limit ${limit}`;
    },

    async target(tenantId: string, dispatchId: string): Promise<DispatchTarget | undefined> {
      const [row] = await sql<(EventRow & { state: DispatchTarget['state']; webhook_id: string; url: string; secret_ciphertext: string; enabled: boolean })[]>`
        select d.state, w.id as webhook_id, w.url, w.secret_ciphertext, w.enabled,
               e.id, e.tenant_id, e.project_id, e.type, e.data, e.created_at
        from webhook_dispatches d
        join webhooks w on w.id = d.webhook_id
        join webhook_events e on e.id = d.event_id
        where d.tenant_id = ${tenantId} and d.id = ${dispatchId}`;
      if (!row) return undefined;
      const { state, webhook_id, url, secret_ciphertext, enabled, ...event } = row;
      return { state, webhook: { id: webhook_id, url, secret_ciphertext, enabled }, event };
    },

    async markSkipped(tenantId: string, dispatchId: string): Promise<void> {
      await sql`
        update webhook_dispatches set state = 'skipped', updated_at = now()
        where tenant_id = ${tenantId} and id = ${dispatchId} and state = 'pending'`;
    },

    /** A dead-lettered dispatch made pending again with a fresh attempt count (a DLQ retry). */
    async reopenFailed(tenantId: string, dispatchId: string): Promise<boolean> {
      const rows = await sql`
        update webhook_dispatches set state = 'pending', attempts = 0, queued_at = null, updated_at = now()
        where tenant_id = ${tenantId} and id = ${dispatchId} and state = 'failed'
        returning id`;
      return rows.length > 0;
    },

    /** Counts an attempt before it is made; undefined when the dispatch is no longer pending. */
    async startAttempt(tenantId: string, dispatchId: string): Promise<number | undefined> {
      const [row] = await sql<{ attempts: number }[]>`
        update webhook_dispatches set attempts = attempts + 1, updated_at = now()
        where tenant_id = ${tenantId} and id = ${dispatchId} and state = 'pending'
        returning attempts`;
      return row?.attempts;
    },

    /** The log row, the dispatch's new state and any dead letter, together or not at all. */
    async finishAttempt(a: AttemptRecord): Promise<void> {
      await sql.begin(async (tx) => {
        await tx`
          insert into webhook_deliveries (id, tenant_id, webhook_id, event_id, attempt, status, duration_ms, error)
          values (${a.id}, ${a.tenantId}, ${a.webhookId}, ${a.eventId}, ${a.attempt}, ${a.status}, ${a.durationMs}, ${a.error})`;
        await tx`
          update webhook_dispatches set state = ${a.outcome}, updated_at = now()
          where tenant_id = ${a.tenantId} and id = ${a.dispatchId} and state = 'pending'`;
        if (a.deadLetter) {
          await deadLetters.record(tx, {
            id: a.deadLetter.id, tenantId: a.tenantId, kind: 'webhook_delivery', refId: a.dispatchId,
            payload: a.deadLetter.payload, attempts: a.attempt, lastError: a.error ?? `HTTP ${a.status}`,
          });
        }
      });
    },

    /** Newest first (ids are UUIDv7). */
    async deliveries(tenantId: string, webhookId: string, beforeId: string | null, limit: number): Promise<DeliveryRow[]> {
      return sql<DeliveryRow[]>`
        select d.id, d.event_id, e.type as event_type, d.attempt, d.status, d.duration_ms, d.error, d.created_at
        from webhook_deliveries d join webhook_events e on e.id = d.event_id
        where d.tenant_id = ${tenantId} and d.webhook_id = ${webhookId} ${beforeId ? sql`and d.id < ${beforeId}` : sql``}
        order by d.id desc
        limit ${limit}`;
    },

    /**
     * Retention: up to `limit` of the project's events created before `cutoff`, with their
     * dispatches, delivery log and dead letters (a dead letter holds a copy of its event).
     */
    async deleteEventsBefore(tenantId: string, projectId: string, cutoff: Date, limit: number): Promise<{ events: number; deliveries: number }> {
      return sql.begin(async (tx) => {
        const events = (await tx<{ id: string }[]>`
          select id from webhook_events
          where tenant_id = ${tenantId} and project_id = ${projectId} and created_at < ${cutoff}
          order by created_at limit ${limit} for update skip locked`).map((e) => e.id);
        if (events.length === 0) return { events: 0, deliveries: 0 };
        const dispatches = (await tx<{ id: string }[]>`
          delete from webhook_dispatches where tenant_id = ${tenantId} and event_id = any(${events}::uuid[]) returning id`).map((d) => d.id);
        if (dispatches.length > 0) {
          await deadLetters.removeFor(tx, tenantId, 'webhook_delivery', dispatches);
        }
        const deliveries = await tx`delete from webhook_deliveries where tenant_id = ${tenantId} and event_id = any(${events}::uuid[])`;
        await tx`delete from webhook_events where tenant_id = ${tenantId} and id = any(${events}::uuid[])`;
        return { events: events.length, deliveries: deliveries.count };
      });
    },
  };
}

export type WebhookRepository = ReturnType<typeof webhookRepository>;

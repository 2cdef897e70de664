import { unavailable } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { TxSql } from '../../stores/pg.js';
import type { AppLogger } from '../../platform/log.js';
import type { RowBatch } from './batcher.js';
import type { AbandonedReservation, OwedRow, RegisteredTrace, RegistryEntry, RegistryRepository, Registration } from './registry-repo.js';
import type { StoredTraceRepository } from './stored-repo.js';

export interface NativeReservation {
  /** Registered to this request as pending writes, in submission order. */
  accepted: string[];
  /** Stored already: 409. */
  duplicates: string[];
  /** Another write of the same id may still commit: the client retries (503), never a 409. */
  inFlight: string[];
  overQuota: string[];
}

export interface OtlpRegistration {
  /** Newly registered by this request (counted against the quota). */
  fresh: string[];
  /** Registered before, by any request: spans join the trace where it lives. */
  existing: RegisteredTrace[];
  overQuota: string[];
}

/** Learns of native trace rows that a settlement found committed (the metrics rollup marks their minutes). */
export interface StoredTraceObserver {
  mark(tenantId: string, startedAtMs: readonly number[]): Promise<void>;
}

export interface SettleRun {
  committed: number;
  released: number;
}

const SETTLE_PAGE = 1_000;

/**
 * The trace registry (Postgres) as ingest sees it: each trace id is reserved `pending` by the
 * process that will write it, and confirmed `committed` by one statement per group commit once
 * ClickHouse holds its rows. A pending reservation whose writer is gone — retired by a restart or
 * a shutdown, or older than any write of the batcher can take — is settled against ClickHouse:
 * present, committed; absent, released with its quota. That happens when this process starts, in
 * the repeatable reconcile job, and whenever a request collides with such a reservation.
 */
export class TraceRegistry {
  /** This process's identity on its reservations (`ingest_writers.id`). */
  readonly writerId = newId();

  constructor(
    private readonly repo: RegistryRepository,
    private readonly stored: StoredTraceRepository,
    private readonly observer: StoredTraceObserver,
    private readonly log: AppLogger,
    private readonly options: { instance: string; abandonAfterMs: number },
  ) {}

  /** Registers this process (retiring its instance's earlier ones) and settles what they left pending. */
  async start(): Promise<SettleRun> {
    await this.repo.registerWriter(this.writerId, this.options.instance);
    return this.settleAbandoned();
  }

  /** After the last group commit of a graceful shutdown: nothing of ours is pending any more. */
  async stop(): Promise<void> {
    await this.repo.retireWriter(this.writerId);
  }

  async reserveNative(tenantId: string, projectId: string, entries: readonly RegistryEntry[], quota: number | null, now: Date): Promise<NativeReservation> {
    const claim = await this.repo.claim(tenantId, projectId, entries, { quota, now, source: 'native', writer: this.writerId });
    const reservation: NativeReservation = { accepted: claim.accepted, duplicates: [], inFlight: [], overQuota: claim.overQuota };
    if (claim.taken.length === 0) return reservation;

    const known = claim.known;
    const pending = known.filter((k) => k.state === 'pending').map((k) => k.traceId);
    reservation.duplicates.push(...known.filter((k) => k.state === 'committed').map((k) => k.traceId));
    const abandoned =
      pending.length === 0 ? [] : await this.repo.abandoned({ tenantId, traceIds: pending, abandonAfterMs: this.options.abandonAfterMs, limit: pending.length });
    const settled = await this.settle(abandoned);
    const abandonedIds = new Set(abandoned.map((a) => a.traceId));
    reservation.inFlight.push(...pending.filter((id) => !abandonedIds.has(id)));
    reservation.duplicates.push(...settled.committed);

    // Released by this settlement, or by a concurrent one before the claim's transaction read them.
    const knownIds = new Set(known.map((k) => k.traceId));
    const free = new Set([...settled.released, ...claim.taken.filter((id) => !knownIds.has(id))]);
    if (free.size === 0) return reservation;
    const again = await this.repo.claim(tenantId, projectId, entries.filter((e) => free.has(e.traceId)), {
      quota,
      now,
      source: 'native',
      writer: this.writerId,
    });
    reservation.accepted.push(...again.accepted);
    reservation.overQuota.push(...again.overQuota);
    reservation.inFlight.push(...again.taken); // claimed by yet another request meanwhile: its outcome decides
    return reservation;
  }

  /**
   * OTLP: spans of a registered trace merge into it, so no id is a duplicate. Unregistered ids are
   * reserved like native ones, and registered ones come back with where they live, from the same
   * claim transaction: one (batched) round trip. An id released by a settlement between the claim's
   * insert and its read is claimed again; should that keep happening, the request is a 503.
   */
  async registerOtlp(tenantId: string, projectId: string, entries: readonly RegistryEntry[], quota: number | null, now: Date): Promise<OtlpRegistration> {
    const registration: OtlpRegistration = { fresh: [], existing: [], overQuota: [] };
    let unsettled = entries;
    for (let attempt = 0; attempt < 3 && unsettled.length > 0; attempt++) {
      const claim = await this.repo.claim(tenantId, projectId, unsettled, { quota, now, source: 'otlp', writer: this.writerId });
      registration.fresh.push(...claim.accepted);
      registration.existing.push(...claim.known);
      registration.overQuota.push(...claim.overQuota);
      const known = new Set(claim.known.map((k) => k.traceId));
      const released = new Set(claim.taken.filter((id) => !known.has(id)));
      unsettled = unsettled.filter((e) => released.has(e.traceId));
    }
    if (unsettled.length > 0) throw unavailable('trace registrations kept changing under this request; retry it', 1);
    return registration;
  }

  /**
   * This request's write failed (not timed out: that one may still commit). Its reservations are
   * settled now — part of a group commit may have landed — or, if ClickHouse cannot tell yet,
   * left pending without a writer, so the next collision or reconcile pass settles them.
   */
  async abandon(tenantId: string, traceIds: readonly string[]): Promise<void> {
    const disowned = await this.repo.disown(tenantId, traceIds, this.writerId);
    await this.settle(disowned);
  }

  /**
   * Runs after each group commit, before its requests are answered: one statement confirms every
   * trace of the batch, then `alongside` runs in the same transaction (the stored counts). It never
   * fails the write (the rows are durable): if Postgres does not answer, the reservations stay
   * pending and a settlement finds them stored. Answers whether the confirmation committed.
   */
  async confirm(batch: Pick<RowBatch, 'registrations'>, alongside?: (tx: TxSql) => Promise<void>): Promise<boolean> {
    const unique = new Map<string, Registration>();
    for (const r of batch.registrations) unique.set(`${r.tenantId}|${r.traceId}`, r);
    let restored;
    try {
      restored = await this.repo.confirm([...unique.values()], this.writerId, alongside);
    } catch (err) {
      this.log.warn({ err, traces: unique.size }, 'registry confirmation failed; the reservations stay pending until settled');
      return false;
    }
    await this.countRestored(restored).catch((err: unknown) => this.log.warn({ err }, 'restored traces could not be counted against the quota'));
    return true;
  }

  /** Traces whose write committed after a settlement had released them as absent: registered again, their quota counted. */
  async countRestored(restored: readonly { tenantId: string; restored: number }[]): Promise<void> {
    for (const { tenantId, restored: n } of restored) {
      this.log.warn({ tenant_id: tenantId, traces: n }, 'a write committed after its reservation was settled as absent; registered again');
      await this.repo.countUsage(tenantId, n, new Date());
    }
  }

  /** Traces counted against the monthly quota in the month of `now` (billing). */
  async monthUsage(tenantId: string, now = new Date()): Promise<number> {
    return this.repo.monthUsage(tenantId, now);
  }

  /** Every abandoned reservation, page by page (startup and the reconcile job). */
  async settleAbandoned(): Promise<SettleRun> {
    const run: SettleRun = { committed: 0, released: 0 };
    for (;;) {
      const page = await this.repo.abandoned({ abandonAfterMs: this.options.abandonAfterMs, limit: SETTLE_PAGE });
      const settled = await this.settle(page);
      run.committed += settled.committed.length;
      run.released += settled.released.length;
      if (page.length < SETTLE_PAGE) return run;
    }
  }

  /** OTLP traces a settlement committed (their writer died) whose row is owed a rebuild from their spans. */
  owedRows(limit: number) {
    return this.repo.owedRows(limit);
  }

  /** Owed rows now rebuilt (TraceWritePath.rebuildOwed): forgotten, unless owed again since. */
  rowsRebuilt(owed: readonly OwedRow[]): Promise<void> {
    return this.repo.rowsRebuilt(owed);
  }

  /** Data-subject erasure (src/modules/privacy): forgets these traces. Idempotent. */
  eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return this.repo.eraseTraces(tenantId, traceIds);
  }

  /** Retired writers with nothing left pending are forgotten after a day. */
  forgetRetiredWriters(): Promise<void> {
    return this.repo.forgetRetiredWriters(86_400_000);
  }

  /** Retention: up to `limit` stored traces of the project that started before `cutoff`. */
  expiredTraces(tenantId: string, projectId: string, cutoff: Date, limit: number): Promise<string[]> {
    return this.repo.expired(tenantId, projectId, cutoff, limit);
  }

  /** The earliest start among each project's stored traces (projects without traces are absent). */
  oldestTraces(tenantId: string, projectIds: readonly string[]): Promise<Map<string, Date>> {
    return this.repo.oldest(tenantId, projectIds);
  }

  /** Settles abandoned reservations against what ClickHouse holds; returns the trace ids of each outcome. */
  private async settle(reservations: readonly AbandonedReservation[]): Promise<{ committed: string[]; released: string[] }> {
    const outcome = { committed: [] as string[], released: [] as string[] };
    const byTenant = new Map<string, AbandonedReservation[]>();
    for (const r of reservations) byTenant.set(r.tenantId, [...(byTenant.get(r.tenantId) ?? []), r]);
    for (const [tenantId, rows] of byTenant) {
      const native = rows.filter((r) => r.source === 'native');
      const withRow = await this.stored.withTraceRow(tenantId, native.map((r) => r.traceId));
      const maybeSpans = rows.filter((r) => !withRow.has(r.traceId)).map((r) => r.traceId);
      const withSpans = await this.stored.withSpans(tenantId, maybeSpans);
      // Native: stored once its trace row is (spans go first). OTLP: stored once any span is; its row
      // is then owed a rebuild from its spans (TraceWritePath.rebuildOwed), as the dead commit's state was never saved.
      const present = rows.filter((r) => (r.source === 'native' ? withRow.has(r.traceId) : withSpans.has(r.traceId)));
      const presentIds = new Set(present.map((r) => r.traceId));
      const absent = rows.filter((r) => !presentIds.has(r.traceId));
      await this.stored.deleteWritten(tenantId, absent.filter((r) => withSpans.has(r.traceId)).map((r) => r.traceId));
      await this.repo.commitPending(tenantId, [...presentIds]);
      const presentNative = present.filter((r) => r.source === 'native');
      if (presentNative.length > 0) await this.observer.mark(tenantId, presentNative.map((r) => r.startedAt.getTime()));
      await this.repo.releasePending(absent);
      outcome.committed.push(...presentIds);
      outcome.released.push(...absent.map((r) => r.traceId));
    }
    if (reservations.length > 0) this.log.warn({ committed: outcome.committed.length, released: outcome.released.length }, 'settled abandoned trace reservations');
    return outcome;
  }
}

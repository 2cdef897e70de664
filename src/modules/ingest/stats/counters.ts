import type { TxSql } from '../../../stores/pg.js';
import { ingestCounters as prom } from './prometheus.js';
import { addCounts, type IngestStatsRepository } from './repo.js';
import { combine, deltaKey, mergeDelta, storedDeltas, type CountDelta, type IngestSource, type RefusalReason, type StoredCount } from './types.js';

export interface CountersLog {
  warn(details: object, message: string): void;
}

/** How often counts decided in memory are written (at most this much is lost if the process is killed). */
export const FLUSH_INTERVAL_MS = 1_000;
/** How long shutdown waits for the last flush: a Postgres that does not answer must not hold the process. */
const CLOSE_FLUSH_TIMEOUT_MS = 5_000;

/**
 * The ingest counts of this process. Counts that a transaction decides are written in it: stored
 * counts by the OTLP group commit and the native confirmation (`saveStored`), quota refusals by
 * the registry's claim. Everything decided in memory — received counts, the other refusals — is
 * summed here per (tenant, project, minute) and written set-wise about once a second and on close,
 * so ingest adds no Postgres round trip per request, and a hot minute's row takes one update per
 * second per process instead of one per request. A flush that fails keeps its counts for the next.
 * What a kill (SIGKILL, a crash) loses: the counts of the last second or so not yet flushed, and
 * the stored counts of native commits whose confirmation failed (see `storedLater`).
 */
export class IngestCounters {
  private pending = new Map<string, CountDelta>();
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private failing = false;
  private closed = false;

  constructor(
    private readonly repo: IngestStatsRepository,
    private readonly log: CountersLog,
    private readonly flushMs = FLUSH_INTERVAL_MS,
  ) {}

  /** Received counts and refusals decided in memory; `persist: false` for refusals a transaction already wrote (quota). */
  count(source: IngestSource, delta: CountDelta, persist = true): void {
    prom.tracesReceived.inc({ source }, delta.tracesReceived);
    prom.spansReceived.inc({ source }, delta.spansReceived);
    for (const [reason, n] of Object.entries(delta.refusedSpans)) prom.spansRefused.inc({ source, reason }, n);
    if (persist) this.keep(delta);
  }

  /** In the caller's transaction, as its last statement: these traces and spans are stored when it commits. */
  async saveStored(tx: TxSql, items: readonly StoredCount[]): Promise<void> {
    await addCounts(tx, storedDeltas(items));
  }

  /** The transaction that saved `items` committed: the process counters follow. */
  storedCommitted(items: readonly StoredCount[]): void {
    for (const s of items) {
      prom.tracesStored.inc({ source: s.source }, s.traces);
      prom.spansStored.inc({ source: s.source }, s.spans);
    }
  }

  /**
   * Stored, but the transaction that was to count it failed (a native confirmation Postgres did not
   * take): counted from memory instead, retried until a flush succeeds. Lost only if the process is
   * killed before Postgres is back.
   */
  storedLater(items: readonly StoredCount[]): void {
    this.storedCommitted(items);
    for (const d of storedDeltas(items)) this.keep(d);
  }

  /** A write that failed: its traces and spans are refused (store_unavailable). */
  storeFailed(items: readonly StoredCount[], reason: RefusalReason = 'store_unavailable'): void {
    for (const s of items) {
      prom.spansRefused.inc({ source: s.source, reason }, s.spans);
      this.keep({
        tenantId: s.tenantId,
        projectId: s.projectId,
        minuteMs: s.minuteMs,
        tracesReceived: 0,
        tracesStored: 0,
        spansReceived: 0,
        spansStored: 0,
        refusedSpans: s.spans > 0 ? { [reason]: s.spans } : {},
        refusedTraces: s.traces > 0 ? { [reason]: s.traces } : {},
      });
    }
  }

  /** Writes what is pending; resolves after every earlier flush. Never throws: what fails stays pending. */
  flush(): Promise<void> {
    this.chain = this.chain.then(() => this.flushOnce());
    return this.chain;
  }

  /** Graceful shutdown, after the last group commit: the last counts are written (or, after a time-out, given up). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    let timer: NodeJS.Timeout | undefined;
    const written = await Promise.race([
      this.flush().then(() => this.pending.size === 0),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), CLOSE_FLUSH_TIMEOUT_MS))),
    ]);
    clearTimeout(timer);
    if (!written) this.log.warn({ timeout_ms: CLOSE_FLUSH_TIMEOUT_MS }, 'ingest counts could not all be written at shutdown; the unwritten ones are lost');
  }

  private keep(delta: CountDelta): void {
    const key = deltaKey(delta);
    const row = this.pending.get(key);
    if (row) mergeDelta(row, delta);
    else this.pending.set(key, { ...delta, refusedSpans: { ...delta.refusedSpans }, refusedTraces: { ...delta.refusedTraces } });
    if (!this.timer && !this.closed) {
      this.timer = setInterval(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  private async flushOnce(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.repo.add(combine(batch.values()));
      if (this.failing) this.log.warn({}, 'ingest counts are written again');
      this.failing = false;
    } catch (err) {
      // Put back under what arrived meanwhile; the next flush retries them.
      for (const d of batch.values()) this.keep(d);
      if (!this.failing) this.log.warn({ err, rows: batch.size }, 'ingest counts could not be written; kept in memory and retried');
      this.failing = true;
    }
  }
}

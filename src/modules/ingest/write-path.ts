import { unavailable } from '../../platform/errors.js';
import type { ClickHouseStore } from '../../stores/clickhouse.js';
import type { TxSql } from '../../stores/pg.js';
import { GroupCommitBatcher, WriteTimeoutError, type BatcherOptions, type RowBatch, type SubmittedRows } from './batcher.js';
import type { OtlpTraceDeriver, DerivedTraces } from './otlp/derive.js';
import type { OtlpStateRepository, TraceKey } from './otlp/state-repo.js';
import type { OtlpSpanWrite } from './otlp/trace-state.js';
import type { TraceRegistry } from './registry-service.js';
import type { AppLogger } from '../../platform/log.js';
import type { IngestCounters } from './stats/counters.js';
import { writeTraceBatch } from './writer.js';

/** Learns of trace rows written or rewritten (the metrics rollup recomputes their minutes). */
export interface TraceRowObserver {
  markRows(rows: readonly { tenant_id: string; started_at: string }[]): Promise<void>;
  markRowsIn(tx: TxSql, rows: readonly { tenant_id: string; started_at: string }[]): Promise<void>;
}

export interface WritePathDeps {
  ch: ClickHouseStore;
  registry: TraceRegistry;
  states: OtlpStateRepository;
  deriver: OtlpTraceDeriver;
  observer: TraceRowObserver;
  /** Stored counts (GET /v1/ingest/stats): written in the transactions that store, or refused when a write fails. */
  counters: Pick<IngestCounters, 'saveStored' | 'storedCommitted' | 'storedLater' | 'storeFailed'>;
  log: AppLogger;
}

/**
 * What one request hands to the write path: native trace rows with their spans and registrations,
 * or OTLP spans whose traces' rows the group commit derives, and what it counts as stored.
 */
export interface RequestRows extends SubmittedRows {
  tenantId: string;
  /** Ids this request reserved in the registry: released to settlement if the write fails. */
  reservedIds: readonly string[];
}

/**
 * The one write path of ingest, native and OTLP: a request's rows go into the group commit and
 * the request is answered once they are committed.
 *
 * A group commit writes spans first, then the traces' search tokens, then trace rows, so a trace
 * row never shows without its spans, nor unfound by a search (writer.ts). Native trace rows come whole with their request. The rows of the OTLP traces a commit
 * touches are derived in it, set-wise: their registry rows are locked (a Postgres transaction
 * for the length of the commit), their stored state and the new spans folded into new rows
 * (otlp/derive.ts), the rows written with the spans, and the new states saved and the traces
 * committed in the same transaction. A commit that fails or dies leaves the states as they were;
 * the exporter's retry then folds its spans again, and nothing is counted twice.
 * Native traces are confirmed in the registry after the commit, before their requests are answered.
 *
 * Stored counts (GET /v1/ingest/stats) are kept by the transactions that decide them: the OTLP
 * commit's transaction adds its requests' counts as its last statement, the native confirmation
 * adds them in its own. A write that fails counts its requests' traces and spans refused
 * (store_unavailable); one that outlives its time-out is counted when it is decided.
 */
export class TraceWritePath {
  private readonly batcher: GroupCommitBatcher;

  constructor(
    private readonly deps: WritePathDeps,
    options: BatcherOptions,
  ) {
    this.batcher = new GroupCommitBatcher(
      (batch) => this.write(batch),
      (batch) => this.confirmNative(batch),
      options,
    );
  }

  /**
   * Group-commits a request's rows and resolves once they are committed. On failure nothing is
   * acknowledged (503, the client retries) and the ids this request reserved are abandoned to
   * settlement, except after a time-out, when the write may still commit and they stay its own.
   */
  async commit(rows: RequestRows): Promise<void> {
    try {
      await this.batcher.submit(rows);
    } catch (err) {
      this.deps.log.warn({ err, tenant_id: rows.tenantId }, 'a group commit failed; its requests are answered 503');
      if (!(err instanceof WriteTimeoutError)) await this.deps.registry.abandon(rows.tenantId, rows.reservedIds).catch(() => {});
      throw Object.assign(unavailable('the trace store did not accept the write; retry later', 2), { cause: err });
    }
  }

  /** Resolves once every submitted row has been written or failed (graceful shutdown). */
  drain(): Promise<void> {
    return this.batcher.drain();
  }

  /**
   * Rewrites, from their stored spans, the rows of OTLP traces that a settlement committed after
   * their writer died (the registry says their row is owed). Part of the reconcile job.
   */
  async rebuildOwed(limit: number): Promise<number> {
    const owed = await this.deps.registry.owedRows(limit);
    if (owed.length === 0) return 0;
    const restored = await this.deps.states.transaction(async (tx) => {
      const locked = await this.deps.states.lock(tx, owed);
      const derived = await this.deps.deriver.rebuild(locked, Date.now());
      await writeTraceBatch(this.deps.ch, { spans: [], traces: derived.rows, storedSpansOf: derived.storedSpansOf });
      return this.saveOtlp(tx, derived);
    });
    await this.deps.registry.countRestored(restored);
    await this.deps.registry.rowsRebuilt(owed);
    return owed.length;
  }

  /** The group commit's write: whatever its time-out, its outcome decides its requests' counts. */
  private async write(batch: RowBatch): Promise<void> {
    const otlpStored = batch.stored.filter((s) => s.source === 'otlp');
    let restored: { tenantId: string; restored: number }[] = [];
    try {
      if (batch.otlpSpans.length === 0) await writeTraceBatch(this.deps.ch, batch);
      else {
        restored = await this.deps.states.transaction(async (tx) => {
          const locked = await this.deps.states.lock(tx, distinctTraces(batch.otlpSpans));
          const derived = await this.deps.deriver.derive(locked, batch.otlpSpans, Date.now());
          await writeTraceBatch(this.deps.ch, { spans: batch.spans, traces: [...batch.traces, ...derived.rows], storedSpansOf: derived.storedSpansOf });
          // Sent together (postgres.js pipelines them on the transaction's connection): one round
          // trip, so the locks they take are held only until the commit, not across event-loop turns.
          const [saved] = await Promise.all([this.saveOtlp(tx, derived), this.deps.counters.saveStored(tx, otlpStored)]);
          return saved;
        });
      }
    } catch (err) {
      this.deps.counters.storeFailed(batch.stored);
      throw err;
    }
    this.deps.counters.storedCommitted(otlpStored);
    await this.deps.registry.countRestored(restored);
  }

  /** In the commit's transaction: the traces committed with their states, their minutes marked for the metrics rollup. */
  private async saveOtlp(tx: TxSql, derived: DerivedTraces) {
    const [restored] = await Promise.all([
      this.deps.states.save(tx, derived.saved, this.deps.registry.writerId),
      this.deps.observer.markRowsIn(tx, derived.rows),
    ]);
    return restored;
  }

  /**
   * After a commit, before its requests are answered: the metrics rollup learns of the native trace
   * rows, then the registry confirms their traces and their stored counts are added, in one
   * transaction. Should the mark fail, the traces stay pending, and the settlement that later finds
   * them stored marks them instead; should either fail, the stored counts are kept in memory until
   * Postgres takes them (the traces are stored, whatever the registry says yet).
   */
  private async confirmNative(batch: RowBatch): Promise<void> {
    if (batch.traces.length === 0) return;
    const stored = batch.stored.filter((s) => s.source === 'native');
    try {
      await this.deps.observer.markRows(batch.traces);
    } catch (err) {
      this.deps.log.warn({ err }, 'metrics rollup marks failed after a commit; its traces stay pending until settled');
      this.deps.counters.storedLater(stored);
      return;
    }
    const confirmed = await this.deps.registry.confirm(batch, (tx) => this.deps.counters.saveStored(tx, stored));
    if (confirmed) this.deps.counters.storedCommitted(stored);
    else this.deps.counters.storedLater(stored);
  }
}

function distinctTraces(spans: readonly OtlpSpanWrite[]): TraceKey[] {
  const keys = new Map<string, TraceKey>();
  for (const s of spans) keys.set(`${s.tenantId}|${s.traceId}`, { tenantId: s.tenantId, traceId: s.traceId });
  return [...keys.values()];
}

import type { OtlpSpanWrite } from './otlp/trace-state.js';
import type { Registration } from './registry-repo.js';
import type { SpanRow, TraceRow } from './rows.js';
import type { StoredCount } from './stats/types.js';

export interface RowBatch {
  traces: TraceRow[];
  spans: SpanRow[];
  /** The native traces these rows belong to, for the registry to confirm once the write commits. */
  registrations: Registration[];
  /** OTLP spans (also in `spans`) whose traces' rows the write derives. */
  otlpSpans: OtlpSpanWrite[];
  /** What the requests count as stored once this write commits (GET /v1/ingest/stats). */
  stored: StoredCount[];
}

/** One request's share of a batch; what it lacks is empty. */
export type SubmittedRows = { readonly [K in keyof RowBatch]?: readonly RowBatch[K][number][] };

export interface BatcherOptions {
  maxRows: number;
  maxWaitMs: number;
  maxConcurrentWrites: number;
  /** A write not committed by then fails its requests (503); see `abandonAfterMs`. */
  writeTimeoutMs: number;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

const emptyBatch = (): RowBatch => ({ traces: [], spans: [], registrations: [], otlpSpans: [], stored: [] });

export class WriteTimeoutError extends Error {
  constructor(ms: number) {
    super(`the trace store did not commit the write within ${ms} ms`);
    this.name = 'WriteTimeoutError';
  }
}

/**
 * How long after its reservation a write can no longer commit through this batcher: it waits at
 * most one write (the one in flight when it was submitted), then runs one of its own, each bounded
 * by the write time-out. A pending reservation older than this has no live write behind it.
 */
export const abandonAfterMs = (options: Pick<BatcherOptions, 'maxWaitMs' | 'writeTimeoutMs'>): number =>
  options.maxWaitMs + 2 * options.writeTimeoutMs + 2_000;

/**
 * Group commit: rows from concurrent requests are written to ClickHouse together, and each request
 * is answered only once the write holding its rows has committed and `afterCommit` (the registry's
 * confirmation) has run. A batch flushes when it reaches `maxRows` or `maxWaitMs` after its first
 * row; while a write is in flight, new rows accumulate into the next batch, so under load batches
 * grow instead of writes queueing. A write that outlives its time-out fails its requests but is
 * still followed: if it commits after all, `afterCommit` runs for it then.
 */
export class GroupCommitBatcher {
  private pending: RowBatch = emptyBatch();
  private waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private readonly idle: (() => void)[] = [];

  constructor(
    private readonly write: (batch: RowBatch) => Promise<void>,
    private readonly afterCommit: (batch: RowBatch) => Promise<void>,
    private readonly options: BatcherOptions,
  ) {}

  submit(rows: SubmittedRows): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const { pending } = this;
      pending.traces.push(...(rows.traces ?? []));
      pending.spans.push(...(rows.spans ?? []));
      pending.registrations.push(...(rows.registrations ?? []));
      pending.otlpSpans.push(...(rows.otlpSpans ?? []));
      pending.stored.push(...(rows.stored ?? []));
      this.waiters.push({ resolve, reject });
      if (this.rowCount() >= this.options.maxRows) this.flushSoon(0);
      else this.flushSoon(this.options.maxWaitMs);
    });
  }

  /** Resolves once every submitted row has been written or failed (graceful shutdown). */
  async drain(): Promise<void> {
    if (this.waiters.length > 0) this.flushSoon(0);
    if (this.inFlight === 0 && this.waiters.length === 0) return;
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  private rowCount(): number {
    return this.pending.traces.length + this.pending.spans.length;
  }

  private flushSoon(delayMs: number): void {
    if (this.timer && delayMs > 0) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, delayMs);
  }

  private async flush(): Promise<void> {
    if (this.waiters.length === 0) return this.notifyIdle();
    if (this.inFlight >= this.options.maxConcurrentWrites) return; // the finishing write flushes again
    const batch = this.pending;
    const waiters = this.waiters;
    this.pending = emptyBatch();
    this.waiters = [];
    this.inFlight += 1;
    try {
      await this.committed(batch);
      for (const w of waiters) w.resolve();
    } catch (err) {
      for (const w of waiters) w.reject(err);
    } finally {
      this.inFlight -= 1;
      if (this.waiters.length > 0) this.flushSoon(this.rowCount() >= this.options.maxRows ? 0 : this.options.maxWaitMs);
      else this.notifyIdle();
    }
  }

  /** The write, bounded by the time-out, then its confirmation (which never fails the write). */
  private async committed(batch: RowBatch): Promise<void> {
    const write = this.write(batch);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new WriteTimeoutError(this.options.writeTimeoutMs)), this.options.writeTimeoutMs);
    });
    try {
      await Promise.race([write, timeout]);
    } catch (err) {
      if (err instanceof WriteTimeoutError) write.then(() => this.afterCommit(batch), () => {});
      throw err;
    } finally {
      clearTimeout(timer);
    }
    await this.afterCommit(batch);
  }

  private notifyIdle(): void {
    if (this.inFlight > 0 || this.waiters.length > 0) return;
    for (const resolve of this.idle.splice(0)) resolve();
  }
}

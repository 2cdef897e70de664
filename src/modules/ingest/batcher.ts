import type { SpanRow, TraceRow } from './rows.js';

export interface RowBatch {
  traces: TraceRow[];
  spans: SpanRow[];
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Group commit: rows from concurrent requests are written to ClickHouse together, and each request
 * is answered only once the write holding its rows has committed. A batch flushes when it reaches
 * `maxRows` or `maxWaitMs` after its first row; while a write is in flight, new rows accumulate
 * into the next batch, so under load batches grow instead of writes queueing.
 */
export class GroupCommitBatcher {
  private pending: RowBatch = { traces: [], spans: [] };
  private waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private readonly idle: (() => void)[] = [];

  constructor(
    private readonly write: (batch: RowBatch) => Promise<void>,
    private readonly options: { maxRows: number; maxWaitMs: number; maxConcurrentWrites: number },
  ) {}

  submit(traces: readonly TraceRow[], spans: readonly SpanRow[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.traces.push(...traces);
      this.pending.spans.push(...spans);
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
    this.pending = { traces: [], spans: [] };
    this.waiters = [];
    this.inFlight += 1;
    try {
      await this.write(batch);
      for (const w of waiters) w.resolve();
    } catch (err) {
      for (const w of waiters) w.reject(err);
    } finally {
      this.inFlight -= 1;
      if (this.waiters.length > 0) this.flushSoon(this.rowCount() >= this.options.maxRows ? 0 : this.options.maxWaitMs);
      else this.notifyIdle();
    }
  }

  private notifyIdle(): void {
    if (this.inFlight > 0 || this.waiters.length > 0) return;
    for (const resolve of this.idle.splice(0)) resolve();
  }
}

import { ApiClient, retryAfterMs, retryable } from './http.js';
import type { IngestTrace } from './records.js';
import { settledWithin, sleep } from './timing.js';

export type DropReason = 'queue_full' | 'rejected' | 'retries_exhausted' | 'exit' | 'shutdown' | 'late_span';

export interface LooptraceStats {
  /** Traces waiting to be sent, and in the request on its way. */
  queued: number;
  inFlight: number;
  /** Traces the server confirmed stored (201, or 409: stored by an earlier attempt). */
  sent: number;
  spansSent: number;
  /** Of `sent`, those answered 409: a retry of a trace whose first answer was lost. */
  duplicates: number;
  /** Trace transmissions repeated after a network error, 429, 5xx or time-out. */
  retried: number;
  dropped: number;
  droppedByReason: Record<DropReason, number>;
  /** Traces not recorded because of `sampleRate`. */
  sampledOut: number;
  requests: number;
  failedRequests: number;
  /** The last problem delivery met, for logs; null when none. */
  lastError: string | null;
}

export interface DeliveryOptions {
  flushAt: number;
  flushIntervalMs: number;
  maxBatchSize: number;
  maxQueueSize: number;
  maxRetries: number;
  onError: ((error: Error) => void) | undefined;
}

interface Pending {
  trace: IngestTrace;
  attempts: number;
}

const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 30_000;
const RETRY_AFTER_CAP_MS = 120_000;


/**
 * Finished traces on their way to POST /v1/ingest/batch: a bounded queue, sent in batches (when
 * `flushAt` traces wait, or every `flushIntervalMs`), one request at a time. Trace ids are made by
 * the client, so resending after a lost answer is safe: 201 and 409 both mean stored. Network
 * errors, 408, 429 and 5xx are retried with exponential backoff, never sooner than Retry-After.
 * Nothing here throws to the caller; problems end in `stats()` and the `onError` hook.
 */
export class Delivery {
  private queue: Pending[] = [];
  private sending: Promise<void> | undefined;
  private inFlight = 0;
  private inFlightIds = new Set<string>();
  private inFlightAbort: AbortController | undefined;
  private retryAt = 0;
  /** Lowered when the server finds a request too large (413): its body limit does not change. */
  private batchLimit: number;
  private timer: NodeJS.Timeout | undefined;
  private readonly counts: Omit<LooptraceStats, 'queued' | 'inFlight' | 'dropped' | 'droppedByReason'> = {
    sent: 0,
    spansSent: 0,
    duplicates: 0,
    retried: 0,
    sampledOut: 0,
    requests: 0,
    failedRequests: 0,
    lastError: null,
  };
  private readonly drops: Record<DropReason, number> = { queue_full: 0, rejected: 0, retries_exhausted: 0, exit: 0, shutdown: 0, late_span: 0 };
  private readonly reported = new Set<string>();

  constructor(
    private readonly api: ApiClient,
    private readonly options: DeliveryOptions,
  ) {
    this.batchLimit = options.maxBatchSize;
  }

  enqueue(trace: IngestTrace): void {
    if (this.queue.length >= this.options.maxQueueSize) return this.drop('queue_full', 1, 'the queue is full: traces are made faster than the server takes them');
    this.queue.push({ trace, attempts: 0 });
    if (this.queue.length >= this.options.flushAt) this.kick();
    else this.timer ??= setTimeout(() => this.kick(), this.options.flushIntervalMs).unref();
  }

  sampledOut(): void {
    this.counts.sampledOut += 1;
  }

  drop(reason: DropReason, traces: number, why: string): void {
    this.drops[reason] += traces;
    this.problem(`${traces} trace(s) dropped (${reason}): ${why}`, reason);
  }

  /** True while the trace waits in the queue or is on its way. */
  has(traceId: string): boolean {
    return this.inFlightIds.has(traceId) || this.queue.some((p) => p.trace.id === traceId);
  }

  /**
   * Sends until the queue is empty or `deadline` passes, waiting out backoff meanwhile; what is
   * left stays queued. At the deadline a request still on its way is abandoned (`abandon`).
   */
  async flush(deadline: number, abandon = false): Promise<void> {
    for (;;) {
      this.kick();
      if (this.sending) await settledWithin(this.sending, deadline - Date.now());
      if (this.queue.length === 0 && !this.sending) return;
      const now = Date.now();
      if (now >= deadline) {
        if (abandon && this.sending) {
          this.inFlightAbort?.abort();
          await this.sending; // its traces are back in the queue, for the caller to count
        }
        return;
      }
      if (this.retryAt > now) await sleep(Math.min(this.retryAt, deadline) - now);
    }
  }

  /** Drops whatever is still queued (after a bounded final flush). */
  discard(reason: DropReason): void {
    clearTimeout(this.timer);
    const left = this.queue.length;
    this.queue = [];
    if (left > 0) this.drop(reason, left, 'the server could not be reached in time');
  }

  stats(): LooptraceStats {
    const dropped = Object.values(this.drops).reduce((a, b) => a + b, 0);
    return { ...this.counts, queued: this.queue.length, inFlight: this.inFlight, dropped, droppedByReason: { ...this.drops } };
  }

  private kick(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.sending || this.queue.length === 0) return;
    const wait = this.retryAt - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => this.kick(), wait).unref();
      return;
    }
    this.sending = this.pump().finally(() => {
      this.sending = undefined;
      if (this.queue.length > 0) this.timer ??= setTimeout(() => this.kick(), Math.max(0, this.retryAt - Date.now())).unref();
    });
  }

  private async pump(): Promise<void> {
    while (this.queue.length > 0 && this.retryAt <= Date.now()) {
      const batch = this.queue.splice(0, this.batchLimit);
      await this.send(batch).catch((err: unknown) => this.problem(`delivery failed: ${String(err)}`, 'internal'));
    }
  }

  private async send(batch: Pending[]): Promise<void> {
    this.inFlight = batch.length;
    this.inFlightIds = new Set(batch.map((p) => p.trace.id));
    this.inFlightAbort = new AbortController();
    this.counts.requests += 1;
    try {
      const { status, headers, json } = await this.api.request('POST', '/v1/ingest/batch', { traces: batch.map((p) => p.trace) }, this.inFlightAbort.signal);
      const results = (json as { results?: { index: number; status: number; code?: string; error?: string }[] } | undefined)?.results;
      if (!Array.isArray(results) || results.length !== batch.length) {
        if (status === 413 && batch.length > 1) {
          this.batchLimit = Math.ceil(batch.length / 2);
          this.queue.unshift(...batch);
          return;
        }
        if (retryable(status)) return this.retry(batch, retryAfterMs(headers), `POST /v1/ingest/batch answered ${status}`);
        this.counts.failedRequests += 1;
        return this.drop('rejected', batch.length, `POST /v1/ingest/batch answered ${status}: ${describe(json)}`);
      }
      const again: Pending[] = [];
      for (const r of results) {
        const item = batch[r.index];
        if (!item) continue;
        if (r.status === 201 || r.status === 409) this.stored(item, r.status === 409);
        else if (retryable(r.status)) again.push(item);
        else this.drop('rejected', 1, `trace ${item.trace.id} refused with ${r.status} ${r.code ?? ''}: ${r.error ?? ''}`);
      }
      if (again.length > 0) this.retry(again, retryAfterMs(headers), `${again.length} trace(s) answered ${status} ${describe(json)}`);
    } catch (err) {
      this.retry(batch, undefined, `POST /v1/ingest/batch failed: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}`);
    } finally {
      this.inFlight = 0;
      this.inFlightIds = new Set();
      this.inFlightAbort = undefined;
    }
  }

  private stored(item: Pending, duplicate: boolean): void {
    this.counts.sent += 1;
    this.counts.spansSent += item.trace.spans.length;
    if (duplicate) this.counts.duplicates += 1;
  }

  /** Back to the front of the queue, in order, unless out of attempts; the next send waits. */
  private retry(items: Pending[], serverWaitMs: number | undefined, why: string): void {
    this.counts.failedRequests += 1;
    this.problem(why, 'retry');
    const keep = items.filter((p) => {
      p.attempts += 1;
      return p.attempts <= this.options.maxRetries;
    });
    if (keep.length < items.length) this.drop('retries_exhausted', items.length - keep.length, why);
    this.counts.retried += keep.length;
    this.queue.unshift(...keep);
    const attempt = Math.max(1, ...keep.map((p) => p.attempts));
    const backoff = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
    this.retryAt = Date.now() + Math.max(backoff, Math.min(serverWaitMs ?? 0, RETRY_AFTER_CAP_MS));
  }

  /** Remembered for stats; told to `onError` (by default a warning, once per kind). */
  private problem(message: string, kind: string): void {
    this.counts.lastError = message;
    const error = new Error(`looptrace: ${message}`);
    try {
      if (this.options.onError) this.options.onError(error);
      else if (!this.reported.has(kind)) {
        this.reported.add(kind);
        console.warn(error.message);
      }
    } catch {
      // The hook is the user's; its failure must not stop delivery.
    }
  }
}

const describe = (json: unknown) => {
  const body = json as { error?: unknown; code?: unknown } | undefined;
  return body && typeof body.error === 'string' ? `${typeof body.code === 'string' ? `${body.code}: ` : ''}${body.error}` : '';
};

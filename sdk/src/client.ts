import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { Delivery, type LooptraceStats } from './delivery.js';
import { ApiClient, retryable } from './http.js';
import { PromptCache } from './prompts.js';
import { settledWithin, sleep } from './timing.js';
import type { IngestTrace, Mask } from './records.js';
import {
  SpanState,
  TraceState,
  unrecordedSpan,
  unrecordedTrace,
  type SpanHandle,
  type SpanOptions,
  type TraceHandle,
  type TraceOptions,
} from './tracing.js';
import { wrapAnthropic } from './wrappers/anthropic.js';
import { wrapOpenAI } from './wrappers/openai.js';

export interface LooptraceOptions {
  /** Default: LOOPTRACE_URL, else http://localhost:8080. */
  baseUrl?: string;
  /** Default: LOOPTRACE_API_KEY. Without a key nothing is recorded (callbacks still run). */
  apiKey?: string;
  /** The project traces go to and prompts are read from, another of the key's tenant; default: the API key's project. */
  projectId?: string;
  /** Record nothing (callbacks still run). Default: true when there is an API key. */
  enabled?: boolean;
  /** Send as soon as this many traces wait (default 20). */
  flushAt?: number;
  /** Send what waits at least this often (default 1,000 ms). */
  flushIntervalMs?: number;
  /** Traces per request, at most 1,000 (default 100). */
  maxBatchSize?: number;
  /** Traces kept while the server is slow or down; more are dropped and counted (default 10,000). */
  maxQueueSize?: number;
  /** Attempts per trace after the first, on network errors, 408, 429 and 5xx (default 8). */
  maxRetries?: number;
  /** Per request to the server (default 10,000 ms). */
  requestTimeoutMs?: number;
  /** How long `flush()` waits at most (default 10,000 ms). */
  flushTimeoutMs?: number;
  /** How long `shutdown()` and the flush at process exit wait at most; what is left is dropped and counted (default 5,000 ms). */
  shutdownTimeoutMs?: number;
  /** Flush when the process is about to exit (its event loop is empty); default true. */
  flushOnExit?: boolean;
  /** The share of traces recorded, 0 to 1 (default 1): decided per trace, so a trace is kept or left whole. */
  sampleRate?: number;
  /** Sees every input, output and metadata before it is recorded; return what should be stored. */
  mask?: Mask;
  /** How long a trace waits for spans still open after its callback returned, such as a stream not yet read to its end (default 60,000 ms). */
  maxSpanWaitMs?: number;
  /** How long a fetched prompt is served before a background refresh (default 60,000 ms). */
  promptCacheTtlMs?: number;
  /** Told about delivery problems (retries, drops). Default: one console warning per kind of problem. */
  onError?: (error: Error) => void;
}

export interface FeedbackInput {
  traceId: string;
  /** 0 to 1. */
  score: number;
  comment?: string;
  /** good, bad or neutral; by default derived from the score by the server. */
  label?: 'good' | 'bad' | 'neutral';
  metadata?: Record<string, unknown>;
}

export type FeedbackResult = { ok: true; id: string } | { ok: false; status: number | null; error: string };

type Active = { trace: TraceState; span: SpanState | undefined } | { unrecorded: true; traceId: string };

const DEFAULTS = {
  flushAt: 20,
  flushIntervalMs: 1_000,
  maxBatchSize: 100,
  maxQueueSize: 10_000,
  maxRetries: 8,
  requestTimeoutMs: 10_000,
  flushTimeoutMs: 10_000,
  shutdownTimeoutMs: 5_000,
  maxSpanWaitMs: 60_000,
  promptCacheTtlMs: 60_000,
};

const isThenable = (v: unknown): v is PromiseLike<unknown> => typeof (v as { then?: unknown } | null)?.then === 'function';

/**
 * Calls `fn` and tells `done` how it went, returning what `fn` returns: a plain promise is
 * followed by an equal one (so a rejection nobody handles is still reported as unhandled); any
 * other thenable, such as a vendor SDK's APIPromise with its own methods, is returned itself,
 * watched. `done` runs before the caller's own continuation and never throws into it.
 */
function observed<T>(fn: () => T, done: (outcome: { value: unknown } | { error: unknown }) => void): T {
  const tell = (outcome: { value: unknown } | { error: unknown }) => {
    try {
      done(outcome);
    } catch {
      // Recording must never change what the user's code sees.
    }
  };
  let result: T;
  try {
    result = fn();
  } catch (error) {
    tell({ error });
    throw error;
  }
  if (!isThenable(result)) {
    tell({ value: result });
    return result;
  }
  if (!(result instanceof Promise) || result.constructor !== Promise) {
    result.then(
      (value) => tell({ value }),
      (error: unknown) => tell({ error }),
    );
    return result;
  }
  return result.then(
    (value) => {
      tell({ value });
      return value;
    },
    (error: unknown) => {
      tell({ error });
      throw error;
    },
  ) as T;
}

export class Looptrace {
  readonly prompts: PromptCache;
  readonly baseUrl: string;
  private readonly enabled: boolean;
  private readonly api: ApiClient | undefined;
  private readonly delivery: Delivery;
  private readonly context = new AsyncLocalStorage<Active>();
  private readonly options: typeof DEFAULTS & LooptraceOptions;
  private readonly sampleRate: number;
  private readonly open = new Map<string, { trace: TraceState; sent: Promise<void>; markSent: () => void }>();
  private closed = false;
  private exitDeadline: number | undefined;

  constructor(options: LooptraceOptions = {}) {
    const defined = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as LooptraceOptions;
    this.options = { ...DEFAULTS, ...defined };
    this.baseUrl = (options.baseUrl ?? process.env.LOOPTRACE_URL ?? 'http://localhost:8080').replace(/\/+$/, '');
    const apiKey = options.apiKey ?? process.env.LOOPTRACE_API_KEY ?? '';
    const api = apiKey ? new ApiClient(this.baseUrl, apiKey, this.options.requestTimeoutMs) : undefined;
    this.api = api;
    this.enabled = (options.enabled ?? true) && api !== undefined;
    this.sampleRate = Math.min(1, Math.max(0, options.sampleRate ?? 1));
    this.delivery = new Delivery(api ?? new ApiClient(this.baseUrl, '', this.options.requestTimeoutMs), {
      flushAt: Math.max(1, this.options.flushAt),
      flushIntervalMs: this.options.flushIntervalMs,
      maxBatchSize: Math.min(1_000, Math.max(1, this.options.maxBatchSize)),
      maxQueueSize: Math.max(1, this.options.maxQueueSize),
      maxRetries: Math.max(0, this.options.maxRetries),
      onError: options.onError,
    });
    this.prompts = new PromptCache(api, this.options.promptCacheTtlMs, this.options.projectId);
    if (!api && options.enabled !== false) console.warn('looptrace: no API key (apiKey or LOOPTRACE_API_KEY): nothing will be recorded');
    if (this.enabled && this.options.flushOnExit !== false) {
      process.on('beforeExit', this.onBeforeExit);
      process.on('exit', this.onExit);
    }
  }

  /** Runs `fn` as a trace; spans and wrapped LLM calls inside it, at any depth of async calls, belong to it. */
  trace<T>(name: string, fn: (trace: TraceHandle) => T, options: TraceOptions = {}): T {
    const trace = this.startTrace(name, options);
    if (!trace) {
      const unrecorded = unrecordedTrace(options.id);
      return this.context.run({ unrecorded: true, traceId: unrecorded.id }, () => fn(unrecorded));
    }
    return this.context.run({ trace, span: undefined }, () => observed(() => fn(trace), (outcome) => trace.returnedWith(outcome)));
  }

  /** Runs `fn` as a span under the active span or trace (outside any trace, as a trace of its own). */
  span<T>(name: string, options: SpanOptions, fn: (span: SpanHandle) => T): T;
  span<T>(name: string, fn: (span: SpanHandle) => T): T;
  span<T>(name: string, optionsOrFn: SpanOptions | ((span: SpanHandle) => T), maybeFn?: (span: SpanHandle) => T): T {
    const [options, fn] = typeof optionsOrFn === 'function' ? [{}, optionsOrFn] : [optionsOrFn, maybeFn!];
    const span = this.startSpan(name, options);
    if (!span) {
      // Unrecorded outside any trace (sampled out): spans inside it are left out with it.
      if (this.context.getStore()) return fn(unrecordedSpan(this.activeTraceId()!));
      const traceId = randomUUID();
      return this.context.run({ unrecorded: true, traceId }, () => fn(unrecordedSpan(traceId)));
    }
    return this.context.run({ trace: span.trace, span }, () => observed(() => fn(span), (outcome) => span.end(outcome)));
  }

  /** The id of the trace the caller runs in, if any. */
  activeTraceId(): string | undefined {
    const active = this.context.getStore();
    if (!active) return undefined;
    return 'unrecorded' in active ? active.traceId : active.trace.id;
  }

  /**
   * A span under the active span or trace, ended by the caller (the LLM wrappers use it: a call's
   * span ends when its answer or its stream does). Undefined when nothing is recorded.
   */
  startSpan(name: string, options: SpanOptions = {}): SpanState | undefined {
    try {
      const active = this.context.getStore();
      if (active && 'unrecorded' in active) return undefined;
      if (active) return new SpanState(active.trace, active.span?.id ?? null, name, options.type ?? 'span', options, this.options.mask);
      const trace = this.startTrace(name, {}, true);
      if (!trace) return undefined;
      const span = new SpanState(trace, null, name, options.type ?? 'span', options, this.options.mask);
      trace.returnedWith({ value: undefined });
      return span;
    } catch {
      return undefined;
    }
  }

  /** Patches `client.chat.completions.create` and `client.responses.create` in place; returns the client. */
  wrapOpenAI<C extends object>(client: C): C {
    return wrapOpenAI(this, client);
  }

  /** Patches `client.messages.create` in place; returns the client. */
  wrapAnthropic<C extends object>(client: C): C {
    return wrapAnthropic(this, client);
  }

  /** Scores a trace (POST /v1/feedback); a trace of this client still on its way is sent first. Never rejects. */
  async feedback(input: FeedbackInput): Promise<FeedbackResult> {
    const api = this.api;
    if (!this.enabled || !api) return { ok: false, status: null, error: 'looptrace is disabled (no API key)' };
    const body = {
      trace_id: input.traceId,
      score: input.score,
      ...(input.comment !== undefined ? { comment: input.comment } : {}),
      ...(input.label !== undefined ? { label: input.label } : {}),
      ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
    };
    const deadline = Date.now() + this.options.flushTimeoutMs;
    let last: FeedbackResult = { ok: false, status: null, error: 'not sent' };
    try {
      const open = this.open.get(input.traceId);
      if (open) await settledWithin(open.sent, deadline - Date.now());
      if (this.delivery.has(input.traceId)) await this.delivery.flush(deadline);
      for (let attempt = 0; attempt < 4; attempt += 1) {
        if (attempt > 0) await sleep(250 * 2 ** attempt);
        try {
          const res = await api.request('POST', '/v1/feedback', body);
          const json = res.json as { id?: string; error?: string } | undefined;
          if (res.status === 201 && json?.id) return { ok: true, id: json.id };
          last = { ok: false, status: res.status, error: json?.error ?? `POST /v1/feedback answered ${res.status}` };
          if (!retryable(res.status)) return last;
        } catch (err) {
          last = { ok: false, status: null, error: err instanceof Error ? err.message : String(err) };
        }
      }
    } catch (err) {
      last = { ok: false, status: null, error: err instanceof Error ? err.message : String(err) };
    }
    return last;
  }

  /** Sends every finished trace; waits at most `flushTimeoutMs` (what is left stays queued). Never rejects. */
  async flush(): Promise<void> {
    try {
      await this.delivery.flush(Date.now() + this.options.flushTimeoutMs);
    } catch {
      // flush is best effort by contract
    }
  }

  /**
   * Sends what is left (open traces too) within `shutdownTimeoutMs`, then drops and counts the
   * rest; nothing is recorded afterwards. Never rejects.
   */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    process.off('beforeExit', this.onBeforeExit);
    process.off('exit', this.onExit);
    try {
      for (const { trace } of [...this.open.values()]) trace.sendNow();
      await this.delivery.flush(Date.now() + this.options.shutdownTimeoutMs, true);
    } catch {
      // counted below
    }
    this.delivery.discard('shutdown');
  }

  /** What was sent, retried and dropped so far. */
  stats(): LooptraceStats {
    return this.delivery.stats();
  }

  private startTrace(name: string, options: TraceOptions, implicit = false): TraceState | undefined {
    if (!this.enabled || this.closed) return undefined;
    if (this.sampleRate < 1 && Math.random() >= this.sampleRate) {
      this.delivery.sampledOut();
      return undefined;
    }
    let markSent = () => {};
    const sent = new Promise<void>((resolve) => (markSent = resolve));
    const sink = {
      mask: this.options.mask,
      projectId: this.options.projectId,
      maxSpanWaitMs: this.options.maxSpanWaitMs,
      finished: (body: IngestTrace) => this.delivery.enqueue(body),
      late: () => this.delivery.drop('late_span', 1, 'a span ended after its trace was sent (maxSpanWaitMs)'),
    };
    const onSent = (t: TraceState) => {
      this.open.delete(t.id);
      markSent();
    };
    const trace = new TraceState(name, options, sink, onSent, implicit);
    this.open.set(trace.id, { trace, sent, markSent });
    return trace;
  }

  /** The event loop is empty: send what is left, within `shutdownTimeoutMs` from the first time. */
  private readonly onBeforeExit = () => {
    if (this.closed) return;
    for (const { trace } of [...this.open.values()]) trace.sendNow();
    const { queued, inFlight } = this.delivery.stats();
    if (queued === 0 && inFlight === 0) return;
    this.exitDeadline ??= Date.now() + this.options.shutdownTimeoutMs;
    const deadline = this.exitDeadline;
    void this.delivery
      .flush(deadline, true)
      .then(() => {
        if (Date.now() >= deadline) this.delivery.discard('exit');
      })
      .catch(() => this.delivery.discard('exit'));
  };

  /** process.exit(): nothing asynchronous runs any more; what is left is counted as dropped. */
  private readonly onExit = () => {
    this.delivery.discard('exit');
  };
}


import type { Looptrace } from '../client.js';
import type { SpanState } from '../tracing.js';

/** A streamed answer put back together, event by event. */
export interface StreamAccumulator {
  event(event: unknown): void;
  /** Records what was gathered on the span (which the caller then ends). */
  finish(span: SpanState): void;
}

/** How one vendor method is recorded as an `llm` span. */
export interface LlmCall {
  /** Span name, e.g. openai.chat.completions. */
  name: string;
  provider: string;
  /** The request body's messages as recorded input. */
  input(body: Record<string, unknown>): unknown;
  /** Request parameters worth keeping in metadata. */
  parameters: readonly string[];
  /** Records an answer that was not streamed. */
  answer(span: SpanState, value: unknown): void;
  accumulator(): StreamAccumulator;
}

export type Body = Record<string, unknown>;
type Method = (this: unknown, ...args: unknown[]) => unknown;

const WRAPPED = Symbol.for('looptrace.wrapped');

/** Replaces `owner[key]` with a traced version, once (wrapping a client twice records each call once). */
export function patchMethod(lt: Looptrace, owner: unknown, key: string, call: LlmCall): void {
  if (!owner || typeof owner !== 'object') return;
  const target = owner as Record<string, unknown>;
  const original = target[key];
  if (typeof original !== 'function' || (original as { [WRAPPED]?: boolean })[WRAPPED]) return;
  const traced = function (this: unknown, ...args: unknown[]) {
    return tracedCall(lt, call, original as Method, this, args);
  };
  Object.defineProperty(traced, WRAPPED, { value: true });
  target[key] = traced;
}

export const integer = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : undefined);

function requestMetadata(call: LlmCall, body: Body): Record<string, unknown> {
  const metadata: Record<string, unknown> = { provider: call.provider, stream: body.stream === true };
  for (const p of call.parameters) if (body[p] !== undefined) metadata[p] = body[p];
  if (Array.isArray(body.tools)) {
    metadata.tools = body.tools.map((t: { name?: unknown; function?: { name?: unknown }; type?: unknown }) => t?.function?.name ?? t?.name ?? t?.type);
  }
  return metadata;
}

/**
 * Calls the vendor method and returns exactly what it returns. The span starts now and ends with
 * the answer, the error, or the end of the stream the answer is.
 */
function tracedCall(lt: Looptrace, call: LlmCall, original: Method, self: unknown, args: unknown[]): unknown {
  const body = (args[0] && typeof args[0] === 'object' ? args[0] : {}) as Body;
  let span: SpanState | undefined;
  try {
    span = lt.startSpan(call.name, {
      type: 'llm',
      model: typeof body.model === 'string' ? body.model : undefined,
      input: call.input(body),
      metadata: requestMetadata(call, body),
    });
  } catch {
    span = undefined;
  }
  if (!span) return original.apply(self, args);
  const recorded = span;
  let result: unknown;
  try {
    result = original.apply(self, args);
  } catch (error) {
    recorded.end({ error });
    throw error;
  }
  try {
    observeResult(result, {
      value: (value) => {
        if (body.stream === true && value && typeof value === 'object') return instrumentStream(value, call.accumulator(), recorded);
        call.answer(recorded, value);
        recorded.end();
      },
      error: (error) => recorded.end({ error }),
    });
  } catch {
    recorded.end();
  }
  return result;
}

interface ResultHooks {
  value(value: unknown): void;
  error(error: unknown): void;
}

const safely = (fn: () => void) => {
  try {
    fn();
  } catch {
    // Recording never changes the vendor call's outcome.
  }
};

/**
 * Watches a vendor call's result without consuming it. The official SDKs return an APIPromise,
 * which parses the response only when the caller asks: its parse step is observed, so the body is
 * read once, by the caller, when the caller wants it (`.withResponse()` keeps working).
 */
function observeResult(result: unknown, hooks: ResultHooks): void {
  const api = result as { parseResponse?: unknown; responsePromise?: unknown; parse?: unknown; asResponse?: unknown } | null;
  if (api && typeof api.parseResponse === 'function' && typeof (api.responsePromise as PromiseLike<unknown> | undefined)?.then === 'function') {
    observeRawOnly(api, hooks);
    const parse = api.parseResponse as Method;
    api.parseResponse = async function (this: unknown, ...args: unknown[]) {
      let value: unknown;
      try {
        value = await parse.apply(this, args);
      } catch (error) {
        safely(() => hooks.error(error));
        throw error;
      }
      safely(() => hooks.value(value));
      return value;
    };
    (api.responsePromise as Promise<unknown>).then(undefined, (error: unknown) => safely(() => hooks.error(error)));
    return;
  }
  if (typeof (result as PromiseLike<unknown> | null)?.then === 'function') {
    (result as PromiseLike<unknown>).then(
      (value) => safely(() => hooks.value(value)),
      (error: unknown) => safely(() => hooks.error(error)),
    );
    return;
  }
  hooks.value(result);
}

/**
 * A caller who takes the raw Response (`.asResponse()`) reads the body itself: the span then ends
 * when the response arrives, without output. `.withResponse()` asks for the parsed body first, so
 * its span still records the answer.
 */
function observeRawOnly(api: { parse?: unknown; asResponse?: unknown }, hooks: ResultHooks): void {
  const parse = api.parse;
  const asResponse = api.asResponse;
  if (typeof parse !== 'function' || typeof asResponse !== 'function') return;
  let parsed = false;
  api.parse = function (this: unknown, ...args: unknown[]) {
    parsed = true;
    return (parse as Method).apply(this, args);
  };
  api.asResponse = function (this: unknown, ...args: unknown[]) {
    const raw = (asResponse as Method).apply(this, args) as Promise<unknown>;
    raw.then(
      () => setImmediate(() => parsed || safely(() => hooks.value(undefined))),
      () => undefined,
    );
    return raw;
  };
}

/**
 * The stream object stays the caller's own (same class, controller, tee, toReadableStream): only
 * the iterator it reads from is observed, and the span ends when that iterator ends, fails or is
 * abandoned (`break`).
 */
function instrumentStream(stream: object, accumulator: StreamAccumulator, span: SpanState): void {
  let finished = false;
  const finish = (outcome?: { error: unknown } | 'cancelled') => {
    if (finished) return;
    finished = true;
    safely(() => accumulator.finish(span));
    if (outcome === 'cancelled') span.update({ metadata: { stream_cancelled: true } });
    span.end(outcome && outcome !== 'cancelled' ? outcome : undefined);
  };
  const observe = (inner: AsyncIterator<unknown>) => observeIterator(inner, accumulator, finish);
  const s = stream as { iterator?: unknown; [Symbol.asyncIterator]?: unknown };
  if (typeof s.iterator === 'function') {
    const iterator = s.iterator as () => AsyncIterator<unknown>;
    s.iterator = function (this: unknown) {
      return observe(iterator.call(this));
    };
  } else if (typeof s[Symbol.asyncIterator] === 'function') {
    const iterator = s[Symbol.asyncIterator] as () => AsyncIterator<unknown>;
    Object.defineProperty(stream, Symbol.asyncIterator, {
      configurable: true,
      writable: true,
      value: function (this: unknown) {
        return observe(iterator.call(this));
      },
    });
  } else finish();
}

function observeIterator(
  inner: AsyncIterator<unknown>,
  accumulator: StreamAccumulator,
  finish: (outcome?: { error: unknown } | 'cancelled') => void,
): AsyncIterableIterator<unknown> {
  return {
    async next(...args: [] | [unknown]) {
      let step: IteratorResult<unknown>;
      try {
        step = await inner.next(...args);
      } catch (error) {
        finish({ error });
        throw error;
      }
      if (step.done) finish();
      else safely(() => accumulator.event(step.value));
      return step;
    },
    async return(value?: unknown) {
      finish('cancelled');
      return inner.return ? inner.return(value) : { done: true, value };
    },
    async throw(error?: unknown) {
      finish({ error });
      if (inner.throw) return inner.throw(error);
      throw error;
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

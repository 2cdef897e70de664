/** The shapes POST /v1/ingest/batch accepts, and how recorded values become their text fields. */

export type FailureType = 'timeout' | 'rate_limit' | 'invalid_response' | 'context_length';

export interface IngestSpan {
  id: string;
  parent_span_id: string | null;
  name: string;
  type: string;
  input?: string;
  output?: string;
  model?: string;
  start_time: string;
  end_time: string;
  prompt_tokens?: number;
  completion_tokens?: number;
  cost?: number;
  error?: string;
  failure_type?: FailureType;
  status_code?: number;
  metadata?: Record<string, unknown>;
}

export interface IngestTrace {
  id: string;
  project_id?: string;
  name: string;
  input: string;
  output: string;
  session_id?: string;
  external_id?: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  started_at: string;
  ended_at: string;
  error?: string;
  spans: IngestSpan[];
}

/** Where a value is about to be recorded: what the `mask` hook is told. */
export interface MaskContext {
  field: 'input' | 'output' | 'metadata';
  /** The span's type, or 'trace' for the trace's own fields. */
  type: string;
  name: string;
}
export type Mask = (value: unknown, where: MaskContext) => unknown;

export interface ErrorFields {
  error: string;
  status_code?: number;
  failure_type?: FailureType;
}

const MAX_ERROR_CHARS = 100_000;

/** Client-side time-outs carry no status: OpenAI's APIConnectionTimeoutError, AbortSignal.timeout's TimeoutError, ETIMEDOUT. */
const looksLikeTimeout = (names: unknown[]) => names.some((n) => typeof n === 'string' && /timeout|timedout/i.test(n));

/**
 * An error as the server classifies it (ingest/failures.ts): the HTTP status of a vendor error
 * (429 is rate_limit, 408/504 timeout, 413 context_length) and its text; a client-side timeout,
 * which has no status, is named explicitly.
 */
export function errorFields(err: unknown): ErrorFields {
  if (typeof err === 'string') return { error: err.slice(0, MAX_ERROR_CHARS) };
  const e = (err ?? {}) as { status?: unknown; statusCode?: unknown; message?: unknown; name?: unknown; code?: unknown };
  const name = err instanceof Error ? err.constructor.name || err.name : 'Error';
  const message = typeof e.message === 'string' ? e.message : String(err);
  const status = [e.status, e.statusCode].find((s): s is number => typeof s === 'number' && Number.isInteger(s) && s >= 100 && s <= 999);
  return {
    error: `${name}: ${message}`.slice(0, MAX_ERROR_CHARS),
    ...(status !== undefined ? { status_code: status } : {}),
    ...(status === undefined && looksLikeTimeout([e.name, name, e.code]) ? { failure_type: 'timeout' as const } : {}),
  };
}

/** JSON text of any value; what JSON cannot say (cycles, BigInt) does not fail the recording. */
function stringify(value: unknown): string {
  try {
    const seen = new WeakSet<object>();
    return (
      JSON.stringify(value, (_key, v: unknown) => {
        if (typeof v === 'bigint') return v.toString();
        if (typeof v === 'object' && v !== null) {
          if (seen.has(v)) return '[circular]';
          seen.add(v);
        }
        return v;
      }) ?? ''
    );
  } catch {
    return String(value);
  }
}

/** A recorded value as the server stores it: strings as they are, anything else as JSON text. */
export function toText(value: unknown, mask: Mask | undefined, where: MaskContext): string | undefined {
  let shown = value;
  if (mask) {
    try {
      shown = mask(value, where);
    } catch {
      return '[masked: the mask hook failed]';
    }
  }
  if (shown === undefined || shown === null) return undefined;
  return typeof shown === 'string' ? shown : stringify(shown);
}

/** Metadata through the mask, kept only if it is still a plain object. */
export function maskMetadata(metadata: Record<string, unknown>, mask: Mask | undefined, where: Omit<MaskContext, 'field'>): Record<string, unknown> | undefined {
  if (Object.keys(metadata).length === 0) return undefined;
  if (!mask) return metadata;
  try {
    const shown = mask(metadata, { ...where, field: 'metadata' });
    return shown && typeof shown === 'object' && !Array.isArray(shown) ? (shown as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export const iso = (epochMs: number) => new Date(epochMs).toISOString();

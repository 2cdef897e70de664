import { z } from 'zod';
import { unsafeCause, type UnsafeUrlError } from '../platform/ssrf.js';
import { ProviderError, type JudgeVerdict, type ProviderFailure } from './types.js';

/** What both SDK adapters are built from; `fetch` is the guarded one for tenant URLs. */
export interface AdapterOptions {
  apiKey: string;
  baseUrl: string;
  timeoutMs: number;
  maxRetries: number;
  fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
}

/** The verdict as JSON Schema: OpenAI's strict structured output and Anthropic's tool input alike. */
export const VERDICT_JSON_SCHEMA = {
  type: 'object' as const,
  properties: {
    score: { type: 'number', minimum: 0, maximum: 1, description: '0 = entirely fails the criteria, 1 = entirely meets them' },
    passed: { type: 'boolean', description: 'Whether the output meets the criteria' },
    reasoning: { type: 'string', description: 'Why, in a few sentences' },
  },
  required: ['score', 'passed', 'reasoning'],
  additionalProperties: false,
};

const verdictSchema = z.object({ score: z.number().min(0).max(1), passed: z.boolean(), reasoning: z.string() });

const excerpt = (text: string) => JSON.stringify(text.slice(0, 200));

export const malformed = (problem: string, answer: string) =>
  new ProviderError('malformed_output', `${problem}; the answer began ${excerpt(answer)}`);

/** A judge's answer checked against the verdict; anything else is `malformed_output`, saying what was wrong. */
export function toVerdict(value: unknown, answer: string): JudgeVerdict {
  const parsed = verdictSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'verdict'}: ${i.message}`).join('; ');
  throw malformed(`the verdict is invalid (${problems})`, answer);
}

export function parseVerdictText(text: string): JudgeVerdict {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw malformed('the answer is not JSON', text);
  }
  return toVerdict(value, text);
}

function failureOfStatus(status: number): ProviderFailure {
  if (status === 401 || status === 403) return 'auth';
  if (status === 408) return 'timeout';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'server_error';
  return 'bad_request';
}

/** The SSRF guard's refusal: a host that does not resolve is unreachable, anything else blocked. */
export function refusedUrl(refused: UnsafeUrlError, vendor: string): ProviderError {
  return new ProviderError(refused.reason === 'unresolvable' ? 'unreachable' : 'blocked_url', `${vendor}: ${refused.message}`);
}

interface SdkErrorClasses {
  APIError: abstract new (...args: never[]) => Error & { status: number | undefined };
  APIConnectionError: abstract new (...args: never[]) => Error;
  APIConnectionTimeoutError: abstract new (...args: never[]) => Error;
}

const short = (message: string) => (message.length > 300 ? `${message.slice(0, 300)}…` : message);

/**
 * An SDK failure as a ProviderError. The SDK has already retried what it retries (429, 5xx,
 * connection errors, time-outs) by the time one reaches here. Anything unknown is passed on as is.
 */
export function toProviderError(err: unknown, vendor: string, sdk: SdkErrorClasses): unknown {
  if (err instanceof ProviderError) return err;
  const refused = unsafeCause(err);
  if (refused) return refusedUrl(refused, vendor);
  if (err instanceof sdk.APIConnectionTimeoutError) return new ProviderError('timeout', `${vendor} did not answer in time`);
  if (err instanceof sdk.APIConnectionError) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return new ProviderError('unreachable', short(`${vendor} is unreachable (${err.message}${cause})`));
  }
  if (err instanceof sdk.APIError && err.status !== undefined) {
    return new ProviderError(failureOfStatus(err.status), short(`${vendor} answered ${err.message}`), err.status);
  }
  return err;
}

/** Runs one vendor call, timing it (retries included) and translating its failure. */
export async function timed<T>(call: () => Promise<T>, fail: (err: unknown) => unknown): Promise<{ value: T; latencyMs: number }> {
  const started = performance.now();
  try {
    const value = await call();
    return { value, latencyMs: Math.round(performance.now() - started) };
  } catch (err) {
    throw fail(err);
  }
}

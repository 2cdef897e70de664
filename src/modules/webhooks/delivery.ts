import { createHmac } from 'node:crypto';
import { fetch as undiciFetch, type Agent } from 'undici';
import { checkOutboundUrl, guardedDispatcher, unsafeCause, type GuardOptions } from '../../platform/ssrf.js';
import type { WebhookPayload } from './schemas.js';

/** Longest one delivery may take, connection, request and response body included. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** How much of a receiver's answer is read: the test endpoint shows it, deliveries discard it. */
export const RESPONSE_PREFIX_BYTES = 4096;
const USER_AGENT = 'Looptrace-Webhooks/1.0';
const MAX_ERROR_CHARS = 500;

export const signatureOf = (rawBody: string, secret: string): string =>
  `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;

export interface SendOutcome {
  /** The receiver's HTTP status; 0 when there was none. */
  status: number;
  /** The first RESPONSE_PREFIX_BYTES of its body, as UTF-8. */
  body: string;
  error: string | null;
  durationMs: number;
}

/**
 * Reads at most `maxBytes` and drops the rest: a receiver's answer is shown truncated, never
 * refused for its size (guardedFetch refuses an oversized body, which would lose its beginning).
 */
async function readPrefix(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<Buffer> {
  if (!body) return Buffer.alloc(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  while (total < maxBytes) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    chunks.push(value);
    total += value.byteLength;
  }
  await reader.cancel().catch(() => {});
  return Buffer.concat(chunks).subarray(0, maxBytes);
}

/** One line saying why there was no HTTP answer; undici puts the socket's error in `cause`. */
function describeFailure(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return `no answer within ${timeoutMs} ms`;
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  const message = cause instanceof Error ? cause.message : String(cause);
  const code = (cause as { code?: unknown }).code;
  return (typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message).slice(0, MAX_ERROR_CHARS);
}

/**
 * Signs and POSTs webhook payloads. The URL is checked before every send and again at connect
 * (the guard's Agent connects only to the address it checked, so no DNS rebinding); redirects are
 * returned, never followed, and the whole exchange is bounded in time and in bytes read.
 */
export class WebhookSender {
  private readonly dispatcher: Agent;

  constructor(
    private readonly guard: GuardOptions,
    private readonly timeoutMs = DELIVERY_TIMEOUT_MS,
  ) {
    this.dispatcher = guardedDispatcher(guard);
  }

  /** Throws UnsafeUrlError when the guard refuses the URL; any other failure is status 0 with an error. */
  async send(url: string, secret: string, payload: WebhookPayload, attempt: number): Promise<SendOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    await checkOutboundUrl(url, this.guard);
    const raw = JSON.stringify(payload);
    const headers = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'x-service-signature': signatureOf(raw, secret),
      'x-service-timestamp': String(Math.floor(Date.now() / 1000)),
      'x-service-event-id': payload.id,
      'x-service-delivery-attempt': String(attempt),
    };
    try {
      const response = await undiciFetch(url, {
        method: 'POST',
        headers,
        body: raw,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
        dispatcher: this.dispatcher,
      });
      const body = await readPrefix(response.body, RESPONSE_PREFIX_BYTES);
      return { status: response.status, body: body.toString('utf8'), error: null, durationMs: elapsed() };
    } catch (err) {
      const refused = unsafeCause(err);
      if (refused) throw refused;
      return { status: 0, body: '', error: describeFailure(err, this.timeoutMs), durationMs: elapsed() };
    }
  }
}

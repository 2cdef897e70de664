import { createHmac } from 'node:crypto';
import { guardedFetch, UnsafeUrlError, type GuardOptions } from '../../platform/ssrf.js';
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

/** One line saying why there was no HTTP answer; undici puts the socket's error in `cause`. */
function describeFailure(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return `no answer within ${timeoutMs} ms`;
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  const message = cause instanceof Error ? cause.message : String(cause);
  const code = (cause as { code?: unknown }).code;
  return (typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message).slice(0, MAX_ERROR_CHARS);
}

/**
 * Signs and POSTs webhook payloads through the shared guard (guardedFetch): the URL is checked
 * before every send and again at connect (no DNS rebinding), redirects are returned, never
 * followed, and the exchange is bounded in time and in bytes read (the answer cut, not refused).
 */
export class WebhookSender {
  constructor(
    private readonly guard: GuardOptions,
    private readonly timeoutMs = DELIVERY_TIMEOUT_MS,
  ) {}

  /** Throws UnsafeUrlError when the guard refuses the URL; any other failure is status 0 with an error. */
  async send(url: string, secret: string, payload: WebhookPayload, attempt: number): Promise<SendOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
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
      const response = await guardedFetch(url, {
        method: 'POST',
        headers,
        body: raw,
        timeoutMs: this.timeoutMs,
        maxBodyBytes: RESPONSE_PREFIX_BYTES,
        oversizedBody: 'truncate',
        guard: this.guard,
      });
      return { status: response.status, body: await response.text(), error: null, durationMs: elapsed() };
    } catch (err) {
      if (err instanceof UnsafeUrlError) throw err;
      return { status: 0, body: '', error: describeFailure(err, this.timeoutMs), durationMs: elapsed() };
    }
  }
}

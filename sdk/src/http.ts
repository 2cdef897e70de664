/** The server's address and key, and one JSON request to it (Node's fetch: no dependency). */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string,
    private readonly timeoutMs: number,
  ) {}

  async request(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<{ status: number; headers: Headers; json: unknown }> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        'user-agent': 'looptrace-sdk-js/0.1.0',
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      signal: signal ? anySignal([signal, timeout]) : timeout,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: parseJson(text) };
  }
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/** AbortSignal.any is Node >= 20.3; the SDK supports 18. */
function anySignal(signals: AbortSignal[]): AbortSignal {
  const controller = new AbortController();
  for (const s of signals) {
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    s.addEventListener('abort', () => controller.abort(s.reason), { once: true });
  }
  return controller.signal;
}

/** Retry-After in seconds or as an HTTP date, in ms; undefined when absent or unreadable. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const value = headers.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Status codes worth another try: the server was busy, limited or briefly unable. */
export const retryable = (status: number) => status === 408 || status === 429 || status >= 500;

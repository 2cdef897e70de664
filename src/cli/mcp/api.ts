/** What the server answered when it refused a call: its status, error code and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | undefined,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The call never got an answer: nothing listens at the URL, DNS failed, or it timed out. */
export class ServerUnreachable extends Error {
  override name = 'ServerUnreachable';
}

export type QueryValues = Record<string, string | number | boolean | undefined>;

/** The read side of the Looptrace HTTP API, as one API key sees it. */
export interface LooptraceApi {
  readonly baseUrl: string;
  get<T>(path: string, query?: QueryValues): Promise<T>;
}

/** Path segments come from an agent: encoded, so an id can never reach another route. */
export const segment = (value: string): string => encodeURIComponent(value);

export function looptraceApi(baseUrl: string, apiKey: string, timeoutMs = 30_000): LooptraceApi {
  return {
    baseUrl,
    async get<T>(path: string, query: QueryValues = {}): Promise<T> {
      const url = new URL(path, baseUrl);
      for (const [key, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(key, String(value));
      let res: Response;
      try {
        res = await fetch(url, { headers: { authorization: `Bearer ${apiKey}`, accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) });
      } catch (err) {
        // fetch reports a refused connection as TypeError('fetch failed') with the socket error as its cause.
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        const reason = (err as Error).name === 'TimeoutError' ? `no answer in ${timeoutMs / 1000} s` : (cause?.code ?? cause?.message ?? (err as Error).message);
        throw new ServerUnreachable(`cannot reach the Looptrace server at ${baseUrl} (${reason}): is it running, and is LOOPTRACE_URL (or --url) right?`);
      }
      const text = await res.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new ApiError(res.status, 'not_json', `GET ${path} answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`, undefined);
      }
      if (!res.ok) {
        const answer = body as { error?: string; code?: string; request_id?: string };
        throw new ApiError(res.status, answer.code ?? `http_${res.status}`, answer.error ?? res.statusText, answer.request_id);
      }
      return body as T;
    },
  };
}

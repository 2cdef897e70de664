import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';

/**
 * The one guard for URLs that tenants give us and we then call (webhooks, LLM base URLs): https
 * only, and every address the host resolves to must be public unicast. The connection itself goes
 * through an undici Agent that resolves and checks again and connects to the checked address, so a
 * DNS answer that changes between the check and the connect (rebinding) cannot reach inside.
 */

export type UnsafeUrlReason = 'not_https' | 'private_ip' | 'unresolvable';

export class UnsafeUrlError extends Error {
  constructor(
    readonly reason: UnsafeUrlReason,
    message: string,
  ) {
    super(message);
    this.name = 'UnsafeUrlError';
  }
}

/** A response body longer than the caller's bound; `status` says what the peer answered. */
export class ResponseTooLargeError extends Error {
  constructor(
    readonly maxBytes: number,
    readonly status: number,
  ) {
    super(`response body exceeds ${maxBytes} bytes`);
    this.name = 'ResponseTooLargeError';
  }
}

export interface GuardOptions {
  requireHttps: boolean;
  /** Tests and local development only (loopback receivers). */
  allowLoopback?: boolean;
  /** The operator's explicit opt-out: every address is allowed. */
  allowPrivate?: boolean;
  /** How host names are resolved (default: the system resolver); tests script DNS answers with it. */
  resolve?: HostResolver;
}

export type HostResolver = (host: string) => Promise<{ address: string; family: number }[]>;

const systemResolver: HostResolver = (host) => dnsLookup(host, { all: true, order: 'verbatim' });

export interface CheckedUrl {
  url: URL;
  address: string;
  family: 4 | 6;
}

type AddressRules = Pick<GuardOptions, 'allowLoopback' | 'allowPrivate' | 'resolve'>;

/**
 * ipaddr.js names every special-purpose block (private, loopback, linkLocal, carrierGradeNat,
 * uniqueLocal, multicast, unspecified, reserved, NAT64, 6to4, Teredo, …); only 'unicast' is public.
 * `process` turns an IPv4-mapped IPv6 address into its IPv4 address first, so ::ffff:10.0.0.1 is
 * judged as 10.0.0.1.
 */
function addressAllowed(address: string, rules: AddressRules): boolean {
  if (rules.allowPrivate) return true;
  const range = ipaddr.process(address).range();
  return range === 'unicast' || (range === 'loopback' && rules.allowLoopback === true);
}

const unbracket = (hostname: string) => (hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname);

/** The host's addresses, all checked; the first is the one to connect to. */
async function resolveChecked(hostname: string, rules: AddressRules): Promise<{ address: string; family: 4 | 6 }> {
  const host = unbracket(hostname);
  const literal = isIP(host);
  let addresses: { address: string; family: number }[];
  if (literal) {
    addresses = [{ address: host, family: literal }];
  } else {
    try {
      addresses = await (rules.resolve ?? systemResolver)(host);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) throw new UnsafeUrlError('unresolvable', `the host ${host} does not resolve`);
  }
  // One non-public answer is enough to refuse: the resolver may hand out any of them later.
  if (!addresses.every((a) => addressAllowed(a.address, rules))) {
    // The address itself is not named: it would tell a tenant about our internal DNS.
    throw new UnsafeUrlError('private_ip', `the host ${host} resolves to a private or otherwise non-public address`);
  }
  const first = addresses[0]!;
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}

export async function checkOutboundUrl(url: string | URL, options: GuardOptions): Promise<CheckedUrl> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UnsafeUrlError('unresolvable', 'not a valid URL');
  }
  const allowed = options.requireHttps ? ['https:'] : ['https:', 'http:'];
  if (!allowed.includes(parsed.protocol)) {
    throw new UnsafeUrlError('not_https', options.requireHttps ? 'the URL must use https' : 'the URL must use http or https');
  }
  return { url: parsed, ...(await resolveChecked(parsed.hostname, options)) };
}

/** A `net` lookup that answers only with an address that passed the check. */
function guardedLookup(rules: AddressRules): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    resolveChecked(hostname, rules).then(
      ({ address, family }) => (lookupOptions.all ? callback(null, [{ address, family }]) : callback(null, address, family)),
      (err: Error) => callback(err, ''),
    );
  };
}

/**
 * An undici Agent whose every new connection is checked: host names through the guarded lookup,
 * IP literals here (Node connects to those without any lookup).
 */
export function guardedDispatcher(rules: AddressRules): Agent {
  const connector = buildConnector({ lookup: guardedLookup(rules) });
  return new Agent({
    connect: (options, callback) => {
      const host = unbracket(options.hostname);
      if (isIP(host) && !addressAllowed(host, rules)) {
        callback(new UnsafeUrlError('private_ip', `the address ${host} is not public`), null);
        return;
      }
      connector(options, callback);
    },
  });
}

const dispatchers = new Map<string, Agent>();

/** One pooled Agent per rule set, so keep-alive connections are reused across calls. */
function dispatcherFor(rules: AddressRules): Agent {
  const key = `${rules.allowLoopback === true}:${rules.allowPrivate === true}`;
  let agent = dispatchers.get(key);
  if (!agent) {
    agent = guardedDispatcher(rules);
    dispatchers.set(key, agent);
  }
  return agent;
}

/**
 * The body, at most `maxBytes` of it: refused (the stream cancelled) as soon as it passes the
 * bound, or with `truncate` cut there instead (a receiver's answer shown, never refused for its size).
 */
export async function readBounded(
  response: { status: number; headers: { get(name: string): string | null }; body: ReadableStream<Uint8Array> | null },
  maxBytes: number,
  truncate = false,
): Promise<Buffer> {
  if (!response.body) return Buffer.alloc(0);
  if (!truncate && Number(response.headers.get('content-length') ?? 0) > maxBytes) {
    await response.body.cancel();
    throw new ResponseTooLargeError(maxBytes, response.status);
  }
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      if (!truncate) throw new ResponseTooLargeError(maxBytes, response.status);
      chunks.push(value);
      return Buffer.concat(chunks).subarray(0, maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

export type GuardedFetchInit = Omit<RequestInit, 'redirect'> & {
  /** Bounds the whole exchange, body included. */
  timeoutMs: number;
  maxBodyBytes: number;
  /** `truncate`: keep the first maxBodyBytes of a longer body instead of refusing it (default `refuse`). */
  oversizedBody?: 'refuse' | 'truncate';
  guard: GuardOptions;
};

// Statuses whose Response may carry no body at all.
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/**
 * fetch for tenant-supplied URLs: checked before the call and again at connect, redirects returned
 * as they are (never followed: a redirect could point anywhere), the whole exchange bounded in time
 * and the body in size. The answer is a fully read Response.
 */
export async function guardedFetch(url: string | URL, init: GuardedFetchInit): Promise<Response> {
  const { timeoutMs, maxBodyBytes, oversizedBody, guard, signal, ...rest } = init;
  await checkOutboundUrl(url, guard);
  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    // undici's own RequestInit type is not the global one, though the runtime objects are alike.
    const response = await undiciFetch(url, {
      ...(rest as Parameters<typeof undiciFetch>[1]),
      signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
      redirect: 'manual',
      dispatcher: dispatcherFor(guard),
    });
    const body = await readBounded(response, maxBodyBytes, oversizedBody === 'truncate');
    const headers = new Headers(response.headers as unknown as Headers);
    // The body is already decoded and complete: these would describe the wire, not it.
    headers.delete('content-encoding');
    headers.delete('content-length');
    return new Response(NULL_BODY_STATUSES.has(response.status) ? null : body, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  } catch (err) {
    throw unsafeCause(err) ?? err;
  }
}

/** The guard's refusal behind a wrapped fetch error (undici and the SDKs nest it in `cause`). */
export function unsafeCause(err: unknown): UnsafeUrlError | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof UnsafeUrlError) return e;
  }
  return undefined;
}

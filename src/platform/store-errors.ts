import type { StoreName } from './metrics.js';

/**
 * Raised by our own bounded waits on a store (a Redis producer that is not connected, a call that
 * took too long), so the edge classifies it like the clients' own connectivity errors.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';

  constructor(
    readonly store: StoreName,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Which store did not answer (when the error tells), and the code or message that says so. */
export interface StoreOutage {
  store: StoreName | undefined;
  reason: string;
  /** `host:port` the client failed to reach, when the error carries it. */
  target?: string;
}

function targetOf(err: Error): string | undefined {
  const { address, port } = err as { address?: unknown; port?: unknown };
  if (address === undefined || address === null) return undefined;
  return port === undefined ? String(address) : `${String(address)}:${String(port)}`;
}

// Socket and DNS failures from node:net, whichever client owns the socket. postgres.js and
// @clickhouse/client reject queries with them unchanged (ioredis reports them only as 'error' events).
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ECONNABORTED', 'EAI_AGAIN']);

// postgres.js `Errors.connection(code)` (postgres/src/errors.js), raised in src/connection.js
// (CONNECT_TIMEOUT, CONNECTION_CLOSED, CONNECTION_DESTROYED) and src/index.js (CONNECTION_ENDED, CONNECTION_DESTROYED).
const POSTGRES_CONNECTION_CODES = new Set(['CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED']);

// Server states (SQLSTATE) of a Postgres that is going away or full; class 08 is "connection exception".
const POSTGRES_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

// ioredis: utils CONNECTION_CLOSED_ERROR_MSG (also BullMQ's ConnectionClosedError), Redis.sendCommand
// with enableOfflineQueue: false, and Command.setTimeout (the commandTimeout option).
const REDIS_MESSAGES = new Set(['Connection is closed.', "Stream isn't writeable and enableOfflineQueue options is false", 'Command timed out']);

// Redis replies of a server that cannot serve now: loading its dataset, busy in a script, in failover.
const REDIS_REPLY_PREFIXES = ['LOADING ', 'BUSY ', 'MASTERDOWN ', 'READONLY ', 'TRYAGAIN ', 'CLUSTERDOWN '];

// @clickhouse/client socket_pool request_timeout, and server exceptions of an overloaded or unreachable cluster.
const CLICKHOUSE_MESSAGES = new Set(['Timeout error.']);
const CLICKHOUSE_TYPES = new Set(['TOO_MANY_SIMULTANEOUS_QUERIES', 'NETWORK_ERROR', 'SOCKET_TIMEOUT', 'ALL_CONNECTION_TRIES_FAILED']);

const MAX_DEPTH = 8;

function classifyOne(err: Error): StoreOutage | undefined {
  if (err instanceof StoreUnavailableError) return { store: err.store, reason: err.message };
  const { code } = err as { code?: unknown };
  // ClickHouseError has `code` and `type`; matched by shape, as chDB throws @clickhouse/client-common's class.
  const { type } = err as { type?: unknown };
  if (typeof type === 'string' && CLICKHOUSE_TYPES.has(type)) return { store: 'clickhouse', reason: type };
  if (err.name === 'PostgresError' && typeof code === 'string') {
    return POSTGRES_STATES.has(code) || code.startsWith('08') ? { store: 'postgres', reason: code } : undefined;
  }
  if (typeof code === 'string' && POSTGRES_CONNECTION_CODES.has(code)) return { store: 'postgres', reason: code };
  // 'aborted' is node:http's ECONNRESET for a client that hung up mid-request: not a store.
  if (typeof code === 'string' && SOCKET_CODES.has(code) && err.message !== 'aborted') {
    // postgres.js defines `query` on every error it rejects a query with (connection.js queryError).
    return { store: 'query' in err ? 'postgres' : undefined, reason: code };
  }
  if (err.name === 'MaxRetriesPerRequestError' || err.name === 'ConnectionClosedError' || REDIS_MESSAGES.has(err.message)) {
    return { store: 'redis', reason: err.name === 'Error' ? err.message : err.name };
  }
  if (err.name === 'ReplyError' && REDIS_REPLY_PREFIXES.some((p) => err.message.startsWith(p))) {
    return { store: 'redis', reason: err.message.split(' ', 1)[0]! };
  }
  if (CLICKHOUSE_MESSAGES.has(err.message)) return { store: 'clickhouse', reason: err.message };
  return undefined;
}

/**
 * The outage behind `err`, if it is a store that did not answer (refused, reset, timed out, shutting
 * down, full) rather than a query that failed. Walks `cause` chains and AggregateError members
 * (node:net reports one error per address it tried), so wrapped errors are recognised too.
 */
export function storeOutage(err: unknown): StoreOutage | undefined {
  const seen = new Set<unknown>();
  const walk = (e: unknown, depth: number): StoreOutage | undefined => {
    if (!(e instanceof Error) || seen.has(e) || depth > MAX_DEPTH) return undefined;
    seen.add(e);
    const own = classifyOne(e);
    if (own) {
      const target = targetOf(e);
      if (target) own.target = target;
    }
    if (own?.store) return own;
    let found = own;
    const members = e instanceof AggregateError ? (e.errors as unknown[]) : [];
    for (const next of [e.cause, ...members]) {
      const inner = walk(next, depth + 1);
      // A member or cause that names its store is the better answer.
      if (inner && (inner.store || !found)) found = inner;
      if (found?.store) break;
    }
    return found;
  };
  return walk(err, 0);
}

/** Whether `err` means a store (Postgres, Redis, ClickHouse) is unreachable or refusing work right now. */
export function isStoreUnavailable(err: unknown): boolean {
  return storeOutage(err) !== undefined;
}

// Postgres refusing a value as text, not failing: NUL in a text parameter ("invalid byte sequence
// for encoding UTF8: 0x00", 22021 character_not_in_repertoire), \u0000 in jsonb ("unsupported
// Unicode escape sequence", 22P05 untranslatable_character), and an unpaired surrogate escape in
// json text (22P02 invalid_text_representation, "Unicode low surrogate must follow a high
// surrogate"; other 22P02s, such as a malformed uuid, are our bugs and stay 500s).
const POSTGRES_TEXT_STATES = new Set(['22021', '22P05']);
const POSTGRES_UNICODE_MESSAGE = /unicode|surrogate/i;

function refusesText(err: Error): boolean {
  const { code, detail } = err as { code?: unknown; detail?: unknown };
  if (err.name !== 'PostgresError' || typeof code !== 'string') return false;
  if (POSTGRES_TEXT_STATES.has(code)) return true;
  return code === '22P02' && POSTGRES_UNICODE_MESSAGE.test(`${err.message} ${typeof detail === 'string' ? detail : ''}`);
}

/**
 * Whether `err` is Postgres refusing text it cannot hold (NUL, an unpaired UTF-16 surrogate): the
 * client's input, not a failure. The edge refuses such text before it reaches a store
 * (text-input.ts); this is the second line for text that reaches one by another way. Walks `cause`
 * chains like storeOutage.
 */
export function isUnstorableText(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth <= MAX_DEPTH; e = e.cause, depth++) {
    if (refusesText(e)) return true;
  }
  return false;
}

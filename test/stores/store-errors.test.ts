import http from 'node:http';
import net from 'node:net';
import { Writable } from 'node:stream';
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import Fastify from 'fastify';
import { Redis, type RedisOptions } from 'ioredis';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/platform/errors.js';
import { registerErrorHandling } from '../../src/platform/http-errors.js';
import { isStoreUnavailable, storeOutage, StoreUnavailableError } from '../../src/platform/store-errors.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * The classifier against error objects the real clients produce: postgres.js, ioredis and
 * @clickhouse/client pointed at a port where nothing listens, at a server that never answers, at
 * one that hangs up, and at small fake servers that answer what a real one answers when it is
 * starting, full or overloaded (the wire formats are the servers' own).
 */

const closers: (() => Promise<unknown> | void)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

/** Listens on a loopback port; at the end, its connections are destroyed and it is closed. */
async function listen(server: net.Server): Promise<number> {
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return (server.address() as net.AddressInfo).port;
}

/** A loopback port where nothing listens. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Accepts connections and never sends a byte: a host that stopped answering. */
async function silentServer(): Promise<number> {
  return listen(net.createServer((socket) => socket.on('error', () => {})));
}

/** Answers a Postgres startup message with an ErrorResponse (FATAL, `code`) and closes. */
async function fakePostgres(code: string, message: string): Promise<number> {
  const field = (tag: string, value: string) => Buffer.concat([Buffer.from(tag), Buffer.from(value), Buffer.from([0])]);
  const fields = Buffer.concat([field('S', 'FATAL'), field('V', 'FATAL'), field('C', code), field('M', message), Buffer.from([0])]);
  const length = Buffer.alloc(4);
  length.writeInt32BE(fields.length + 4);
  const response = Buffer.concat([Buffer.from('E'), length, fields]);
  return listen(net.createServer((socket) => socket.once('data', () => socket.end(response)).on('error', () => {})));
}

/** Answers every RESP command with `reply` (a raw RESP line). */
async function fakeRedis(reply: string): Promise<number> {
  return listen(net.createServer((socket) => socket.on('data', () => socket.write(reply)).on('error', () => {})));
}

/** An HTTP server answering every request with `status` and a ClickHouse exception text. */
async function fakeClickHouse(status: number, code: number, body: string): Promise<number> {
  const server = http.createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'text/plain', 'x-clickhouse-exception-code': String(code) });
    res.end(body);
  });
  return listen(server as unknown as net.Server);
}

async function rejection(promise: PromiseLike<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

const pg = (port: number, options: postgres.Options<Record<string, never>> = {}) => {
  const sql = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, connect_timeout: 2, onnotice: () => {}, ...options });
  closers.push(() => sql.end({ timeout: 0 }));
  return sql;
};

// disableClientInfo: a fake server would answer the CLIENT SETINFO of the handshake, not the command under test.
const redisAt = (port: number, options: RedisOptions = {}) => {
  const redis = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 50, disableClientInfo: true, ...options });
  redis.on('error', () => {});
  closers.push(() => redis.disconnect());
  return redis;
};

const clickhouseAt = (port: number, requestTimeout = 2_000) => {
  const client = createClient({ url: `http://127.0.0.1:${port}`, request_timeout: requestTimeout, log: { level: ClickHouseLogLevel.OFF } });
  closers.push(() => client.close());
  return client;
};

describe('postgres.js', () => {
  it('a refused connection (ECONNREFUSED) is Postgres unavailable', async () => {
    const port = await closedPort();
    const err = await rejection(pg(port)`select 1`);
    expect((err as { code?: string }).code).toBe('ECONNREFUSED');
    expect(storeOutage(err)).toEqual({ store: 'postgres', reason: 'ECONNREFUSED', target: `127.0.0.1:${port}` });
  });

  it('a server that never answers the startup (CONNECT_TIMEOUT) is unavailable', async () => {
    const err = await rejection(pg(await silentServer(), { connect_timeout: 1 })`select 1`);
    expect(storeOutage(err)).toMatchObject({ store: 'postgres', reason: 'CONNECT_TIMEOUT' });
  });

  it('a connection dropped mid-query (CONNECTION_CLOSED) is unavailable', async () => {
    const proxy = TcpProxy.forUrl(process.env.DATABASE_URL!, 5432);
    await proxy.start();
    closers.push(() => proxy.close());
    const name = `store-errors-${process.pid}`;
    const sql = pg(proxy.port, { connection: { application_name: name } });
    const admin = pg(Number(new URL(process.env.DATABASE_URL!).port || 5432));
    const pending = rejection(sql`select pg_sleep(10)`);
    // The sleep itself: postgres.js first reads the array types on a new connection, and a cut
    // during that read makes it reconnect (ECONNREFUSED from the closed proxy) instead.
    const running = () => admin`select pid from pg_stat_activity where application_name = ${name} and state = 'active' and query like 'select pg_sleep%'`;
    while ((await running()).length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    await proxy.cut();
    const err = await pending;
    expect(storeOutage(err)).toMatchObject({ store: 'postgres', reason: 'CONNECTION_CLOSED' });
    // The server notices a vanished client only when the sleep ends; do not leave it sleeping.
    await admin`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${name}`;
  });

  it('a pool that was ended (CONNECTION_ENDED) is unavailable', async () => {
    const sql = postgres(process.env.DATABASE_URL!, { max: 1 });
    await sql`select 1`;
    await sql.end();
    const err = await rejection(sql`select 1`);
    expect(storeOutage(err)).toMatchObject({ store: 'postgres', reason: 'CONNECTION_ENDED' });
  });

  it.each([
    ['57P03', 'the database system is starting up'],
    ['57P01', 'terminating connection due to administrator command'],
    ['57P02', 'terminating connection because of crash of another server process'],
    ['53300', 'sorry, too many clients already'],
    ['08006', 'connection failure'],
  ])('a server answering %s (%s) is unavailable', async (code, message) => {
    const err = await rejection(pg(await fakePostgres(code, message))`select 1`);
    expect(err.name).toBe('PostgresError');
    expect(storeOutage(err)).toMatchObject({ store: 'postgres', reason: code });
  });

  it('a query the server refuses (syntax, constraint) is not an outage', async () => {
    const sql = pg(Number(new URL(process.env.DATABASE_URL!).port || 5432));
    expect(isStoreUnavailable(await rejection(sql`selec 1`))).toBe(false);
    expect(isStoreUnavailable(await rejection(sql`select 1/0`))).toBe(false);
    expect(isStoreUnavailable(await rejection(pg(await fakePostgres('28P01', 'password authentication failed'))`select 1`))).toBe(false);
  });
});

describe('ioredis', () => {
  it('a command while disconnected without an offline queue is Redis unavailable', async () => {
    const err = await rejection(redisAt(await closedPort(), { enableOfflineQueue: false }).ping());
    expect(err.message).toBe("Stream isn't writeable and enableOfflineQueue options is false");
    expect(storeOutage(err)).toMatchObject({ store: 'redis' });
  });

  it('a command that outlived its reconnect attempts (MaxRetriesPerRequestError) is unavailable', async () => {
    const err = await rejection(redisAt(await closedPort(), { maxRetriesPerRequest: 1 }).ping());
    expect(err.name).toBe('MaxRetriesPerRequestError');
    expect(storeOutage(err)).toEqual({ store: 'redis', reason: 'MaxRetriesPerRequestError' });
  });

  it('a command on a closed connection ("Connection is closed.") is unavailable', async () => {
    const redis = redisAt(await silentServer(), { retryStrategy: () => null, enableReadyCheck: false, protocol: 2 });
    await new Promise((resolve) => redis.once('connect', resolve));
    const pending = rejection(redis.ping());
    redis.disconnect();
    const err = await pending;
    expect(err.message).toBe('Connection is closed.');
    expect(storeOutage(err)).toMatchObject({ store: 'redis' });
  });

  it('a command the server never answers (commandTimeout) is unavailable', async () => {
    const redis = redisAt(await silentServer(), { commandTimeout: 200, enableReadyCheck: false, protocol: 2 });
    await new Promise((resolve) => redis.once('connect', resolve));
    const err = await rejection(redis.ping());
    expect(err.message).toBe('Command timed out');
    expect(storeOutage(err)).toMatchObject({ store: 'redis', reason: 'Command timed out' });
  });

  it('a server still loading its dataset (LOADING) is unavailable; an unknown command is not', async () => {
    const loading = redisAt(await fakeRedis('-LOADING Redis is loading the dataset in memory\r\n'), { enableReadyCheck: false, protocol: 2 });
    const err = await rejection(loading.ping());
    expect(err.name).toBe('ReplyError');
    expect(storeOutage(err)).toMatchObject({ store: 'redis', reason: 'LOADING' });
    const real = new Redis(process.env.REDIS_URL!);
    closers.push(() => real.disconnect());
    expect(isStoreUnavailable(await rejection(real.call('NO-SUCH-COMMAND')))).toBe(false);
  });
});

describe('@clickhouse/client', () => {
  it('a refused connection (ECONNREFUSED) is unavailable, its store unknown but its target named', async () => {
    const port = await closedPort();
    const err = await rejection(clickhouseAt(port).query({ query: 'SELECT 1' }));
    expect(storeOutage(err)).toEqual({ store: undefined, reason: 'ECONNREFUSED', target: `127.0.0.1:${port}` });
  });

  it('a server that never answers ("Timeout error.") is unavailable', async () => {
    const err = await rejection(clickhouseAt(await silentServer(), 200).query({ query: 'SELECT 1' }));
    expect(storeOutage(err)).toEqual({ store: 'clickhouse', reason: 'Timeout error.' });
  });

  it('a server that hangs up ("socket hang up", ECONNRESET) is unavailable', async () => {
    const port = await listen(net.createServer((socket) => socket.destroy()));
    const err = await rejection(clickhouseAt(port).query({ query: 'SELECT 1' }));
    expect(err.message).toBe('socket hang up');
    expect(storeOutage(err)).toMatchObject({ reason: 'ECONNRESET' });
  });

  it('an overloaded server (TOO_MANY_SIMULTANEOUS_QUERIES) is unavailable; an unknown table is not', async () => {
    const busy = await fakeClickHouse(
      503,
      202,
      'Code: 202. DB::Exception: Too many simultaneous queries. Maximum: 100. (TOO_MANY_SIMULTANEOUS_QUERIES) (version 24.8.4.13 (official build))\n',
    );
    const err = await rejection(clickhouseAt(busy).query({ query: 'SELECT 1' }));
    expect(storeOutage(err)).toEqual({ store: 'clickhouse', reason: 'TOO_MANY_SIMULTANEOUS_QUERIES' });
    const missing = await fakeClickHouse(
      404,
      60,
      'Code: 60. DB::Exception: Unknown table expression identifier \'spans\' in scope SELECT 1 FROM spans. (UNKNOWN_TABLE) (version 24.8.4.13 (official build))\n',
    );
    expect(isStoreUnavailable(await rejection(clickhouseAt(missing).query({ query: 'SELECT 1 FROM spans' })))).toBe(false);
  });
});

describe('wrapping and non-store errors', () => {
  it('looks through cause chains and AggregateError members, and stops on cycles', async () => {
    const refused = await rejection(pg(await closedPort())`select 1`);
    const wrapped = new AppError(503, 'service_unavailable', 'the trace store did not accept the write');
    Object.assign(wrapped, { cause: new Error('batch failed', { cause: refused }) });
    expect(storeOutage(wrapped)).toMatchObject({ store: 'postgres', reason: 'ECONNREFUSED' });

    // node:net tries every address of a host and reports them together.
    const aggregate = await new Promise<Error>((resolve) => {
      const lookup = ((_host: string, _options: unknown, callback: (err: null, addresses: { address: string; family: number }[]) => void) =>
        callback(null, [
          { address: '127.0.0.1', family: 4 },
          { address: '127.0.0.2', family: 4 },
        ])) as unknown as net.LookupFunction;
      closedPort().then((port) => net.connect({ host: 'store.test', port, autoSelectFamily: true, lookup }).on('error', resolve));
    });
    expect(aggregate).toBeInstanceOf(AggregateError);
    expect(storeOutage(new Error('query failed', { cause: aggregate }))).toMatchObject({ reason: 'ECONNREFUSED' });

    const cyclic = new Error('a');
    const other = new Error('b', { cause: cyclic });
    Object.assign(cyclic, { cause: other });
    expect(isStoreUnavailable(cyclic)).toBe(false);
  });

  it('recognises our own bounded waits', () => {
    expect(storeOutage(new StoreUnavailableError('redis', 'queue connection is reconnecting'))).toEqual({
      store: 'redis',
      reason: 'queue connection is reconnecting',
    });
  });

  it('is not fooled by a client that hung up on us (node:http "aborted") or by plain errors', async () => {
    const aborted = await new Promise<Error>((resolve) => {
      let client: net.Socket | undefined;
      // The client hangs up once the server is reading its body.
      const server = http.createServer((req) => {
        req.on('error', resolve);
        client?.destroy();
      });
      listen(server as unknown as net.Server).then((port) => {
        client = net.connect(port, '127.0.0.1', () => client!.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc'));
      });
    });
    expect((aborted as { code?: string }).code).toBe('ECONNRESET');
    expect(isStoreUnavailable(aborted)).toBe(false);
    expect(isStoreUnavailable(new Error('boom'))).toBe(false);
    expect(isStoreUnavailable(new AppError(404, 'not_found', 'nope'))).toBe(false);
    expect(isStoreUnavailable('ECONNREFUSED')).toBe(false);
    expect(isStoreUnavailable(undefined)).toBe(false);
  });
});

describe('the error handler', () => {
  it('answers a store outage with 503 service_unavailable and Retry-After, logged once at warn naming the store', async () => {
    const refused = await rejection(pg(await closedPort())`select 1`);
    const lines: { level: number; msg: string; store?: string; err?: unknown }[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    const app = Fastify({ logger: { level: 'info', stream } });
    registerErrorHandling(app);
    app.get('/outage', async () => {
      throw refused;
    });
    app.get('/bug', async () => {
      throw new Error('a bug');
    });
    closers.push(() => app.close());

    const res = await app.inject({ method: 'GET', url: '/outage' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ code: 'service_unavailable', error: 'a backing store is unavailable; retry later' });
    expect(res.headers['retry-after']).toBe('2');
    expect(res.body).not.toContain('127.0.0.1');
    const warned = lines.filter((l) => l.level === 40 && l.store !== undefined);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ store: 'postgres', reason: 'ECONNREFUSED', msg: 'postgres unavailable: ECONNREFUSED' });
    expect(warned[0]!.err).toBeUndefined();
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);

    const bug = await app.inject({ method: 'GET', url: '/bug' });
    expect(bug.statusCode).toBe(500);
    expect(bug.json()).toMatchObject({ code: 'internal_error' });
    expect(lines.filter((l) => l.level >= 50 && l.msg === 'request failed')).toHaveLength(1);
  });
});

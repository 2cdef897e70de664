import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, REDACTED_LOG_PATHS, type App } from '../../src/app.js';
import { PLANS } from '../../src/platform/plans.js';
import { RateLimiter } from '../../src/platform/ratelimit.js';
import { anOtlpRequest, anOtlpSpan, toProtobuf } from '../builders/otlp.js';
import { aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * A store that does not answer is a 503 service_unavailable with Retry-After on every route, never
 * a 500; Redis (rate-limit windows and queues only) being away stops nothing. Each describe points
 * one app at a real store through a TCP proxy and cuts the proxy: the shared servers are untouched.
 */

interface LogLine {
  level: number;
  msg?: string;
  store?: string;
  reason?: string;
}

const WARN = 40;
const ERROR = 50;

/** An app over `ctx`'s stores whose log lines are kept, to count warnings. */
async function loggingApp(ctx: TestContext): Promise<{ app: App; lines: LogLine[] }> {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const app = await buildApp({ ...ctx.stores, logger: { level: 'info', redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' }, stream } });
  await app.ready();
  return { app, lines };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for a condition of the clients (a connection dropping or coming back); gives up after `tries`. */
async function until(what: string, condition: () => boolean | Promise<boolean>, tries = 200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await condition()) return;
    await sleep(50);
  }
  throw new Error(`gave up waiting until ${what}`);
}

const SESSION = 'outage-session';
const METRICS_RANGE = 'from=2026-10-31T00:00:00.000Z&to=2026-11-02T00:00:00.000Z&interval=hour';

const ROUTE_NAMES = [
  'POST /v1/ingest',
  'POST /v1/ingest/batch',
  'POST /v1/otlp/traces (json)',
  'POST /v1/otlp/traces (protobuf)',
  'GET /v1/traces',
  'GET /v1/traces/{id}',
  'GET /v1/traces/export',
  'GET /v1/metrics',
  'GET /v1/metrics (group_by)',
  'GET /v1/sessions',
  'GET /v1/sessions/{id}',
  'GET /v1/projects',
  'GET /v1/projects/{id}',
] as const;
type RouteName = (typeof ROUTE_NAMES)[number];
const INGEST_ROUTES = ROUTE_NAMES.filter((name) => name.startsWith('POST'));
type RouteTable = Record<RouteName, () => InjectOptions>;

/** Every ingest and read route, as an API key calls it; ingest bodies are fresh on each call. */
function routes(t: TestTenant, knownTraceId: string): RouteTable {
  const json = { ...t.auth, 'content-type': 'application/json' };
  return {
    'POST /v1/ingest': () => ({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: aTrace({ session_id: SESSION }) }),
    'POST /v1/ingest/batch': () => ({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces: [aTrace(), aTrace()] } }),
    'POST /v1/otlp/traces (json)': () => ({
      method: 'POST',
      url: '/v1/otlp/traces',
      headers: json,
      payload: JSON.stringify(anOtlpRequest([anOtlpSpan()])),
    }),
    'POST /v1/otlp/traces (protobuf)': () => ({
      method: 'POST',
      url: '/v1/otlp/traces',
      headers: { ...t.auth, 'content-type': 'application/x-protobuf' },
      payload: toProtobuf(anOtlpRequest([anOtlpSpan()])),
    }),
    'GET /v1/traces': () => ({ method: 'GET', url: '/v1/traces', headers: t.auth }),
    'GET /v1/traces/{id}': () => ({ method: 'GET', url: `/v1/traces/${knownTraceId}`, headers: t.auth }),
    'GET /v1/traces/export': () => ({ method: 'GET', url: '/v1/traces/export?format=jsonl', headers: t.auth }),
    'GET /v1/metrics': () => ({ method: 'GET', url: `/v1/metrics?${METRICS_RANGE}`, headers: t.auth }),
    'GET /v1/metrics (group_by)': () => ({ method: 'GET', url: `/v1/metrics?${METRICS_RANGE}&group_by=model`, headers: t.auth }),
    'GET /v1/sessions': () => ({ method: 'GET', url: '/v1/sessions', headers: t.auth }),
    'GET /v1/sessions/{id}': () => ({ method: 'GET', url: `/v1/sessions/${SESSION}`, headers: t.auth }),
    'GET /v1/projects': () => ({ method: 'GET', url: '/v1/projects', headers: t.auth }),
    'GET /v1/projects/{id}': () => ({ method: 'GET', url: `/v1/projects/${t.projectId}`, headers: t.auth }),
  };
}

/** 201 for native ingest, 200 for everything else. */
const SUCCESS: Record<string, number> = { 'POST /v1/ingest': 201, 'POST /v1/ingest/batch': 201 };
const successOf = (name: string) => SUCCESS[name] ?? 200;

async function timed(app: App, options: InjectOptions): Promise<{ res: LightMyRequestResponse; ms: number }> {
  const started = performance.now();
  const res = await app.inject(options);
  return { res, ms: Math.round(performance.now() - started) };
}

/** Calls every route once; logs status and elapsed ms of each (for the record, never asserted). */
async function callAll(app: App, table: RouteTable, phase: string, only: (name: RouteName) => boolean = () => true) {
  const out = new Map<RouteName, LightMyRequestResponse>();
  const report: string[] = [];
  for (const name of ROUTE_NAMES.filter(only)) {
    const { res, ms } = await timed(app, table[name]());
    out.set(name, res);
    report.push(`${phase.padEnd(22)} ${name.padEnd(32)} ${res.statusCode} ${(safeJson(res).code ?? '').padEnd(20)} ${ms} ms`);
  }
  console.log(report.join('\n'));
  return out;
}

function safeJson(res: LightMyRequestResponse): { code?: string } {
  try {
    return res.json();
  } catch {
    return {};
  }
}

function expectUnavailable(res: LightMyRequestResponse, label: string): void {
  expect(res.statusCode, `${label}: ${res.body.slice(0, 300)}`).toBe(503);
  expect(safeJson(res).code, label).toBe('service_unavailable');
  expect(Number(res.headers['retry-after']), label).toBeGreaterThanOrEqual(1);
}

function expectRateLimitHeaders(res: LightMyRequestResponse, label: string): void {
  expect(res.headers['x-ratelimit-limit'], label).toBeDefined();
  expect(res.headers['x-ratelimit-remaining'], label).toBeDefined();
  expect(Number(res.headers['x-ratelimit-reset']), label).toBeGreaterThanOrEqual(1);
}

/** Sum of a metric's series (`name`), or one series (`name{label="value"}`); undefined when absent. */
async function metricValue(app: App, series: string): Promise<number | undefined> {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const values = text
    .split('\n')
    .filter((line) => (series.includes('{') ? line.startsWith(`${series} `) : line.startsWith(`${series} `) || line.startsWith(`${series}{`)))
    .map((line) => Number(line.slice(line.lastIndexOf(' ') + 1)));
  return values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0);
}

/** An app whose store at `variable` goes through a proxy, with a tenant, one stored trace and the route table. */
async function proxiedApp(variable: 'REDIS_URL' | 'DATABASE_URL', defaultPort: number, env: Record<string, string> = {}) {
  const proxy = TcpProxy.forUrl(process.env[variable]!, defaultPort);
  await proxy.start();
  const ctx = await startApp({ [variable]: proxy.rewrite(process.env[variable]!), ...env });
  const { app, lines } = await loggingApp(ctx);
  const t = await createTenant(app);
  const known = aTrace({ session_id: SESSION });
  expect((await app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: known })).statusCode).toBe(201);
  return { proxy, ctx, app, lines, t, table: routes(t, known.id) };
}

async function closeProxiedApp(fixture: { proxy: TcpProxy; app?: App; ctx?: TestContext } | undefined): Promise<void> {
  if (!fixture) return;
  await fixture.proxy.restore();
  await fixture.app?.close();
  await fixture.ctx?.close();
  await fixture.proxy.close();
}

describe('Redis unreachable', () => {
  let fixture: Awaited<ReturnType<typeof proxiedApp>> | undefined;
  let proxy: TcpProxy;
  let ctx: TestContext;
  let app: App;
  let lines: LogLine[];
  let table: RouteTable;

  beforeAll(async () => {
    fixture = await proxiedApp('REDIS_URL', 6379);
    ({ proxy, ctx, app, lines, table } = fixture);
    // Everything answers while Redis is there, queue depths included.
    for (const [name, res] of await callAll(app, table, 'redis reachable')) expect(res.statusCode, name).toBe(successOf(name));
    expect(await metricValue(app, 'queue_jobs')).toBeDefined();
    await proxy.cut();
    await until('the Redis client notices', () => ctx.stores.redis.status !== 'ready');
  });
  afterAll(async () => closeProxiedApp(fixture));

  it.each(INGEST_ROUTES)(
    '%s still ingests, with rate-limit headers',
    async (name) => {
      const { res, ms } = await timed(app, table[name]());
      console.log(`redis cut: ${name} ${res.statusCode} ${ms} ms ${res.statusCode >= 400 ? res.body.slice(0, 200) : ''}`);
      expect(res.statusCode, res.body.slice(0, 300)).toBe(successOf(name));
      expectRateLimitHeaders(res, name);
    },
  );

  it('every read route still answers, with rate-limit headers, and none is a 500', async () => {
    for (const [name, res] of await callAll(app, table, 'redis cut', (name) => name.startsWith('GET'))) {
      expect(res.statusCode, `${name}: ${res.body.slice(0, 300)}`).toBe(200);
      expectRateLimitHeaders(res, name);
    }
  });

  it('counts requests per process while Redis is away, with the same windows and limits', async () => {
    const limiter = new RateLimiter(ctx.stores.redis, `${ctx.stores.config.redisPrefix}-outage-test`);
    const now = Date.UTC(2030, 0, 1, 12, 0, 15); // 15 s into a window
    const tenant = `outage-${process.pid}`;
    const states = await Promise.all(Array.from({ length: 3601 }, () => limiter.hit(tenant, 'starter', 'query', now)));
    expect(states.every((s) => s.limit === PLANS.starter.queryRequestsPerMinute && s.resetSeconds === 45)).toBe(true);
    expect(states.filter((s) => s.exceeded)).toHaveLength(1);
    expect(Math.min(...states.map((s) => s.remaining!))).toBe(0);
    expect(limiter.degraded).toBe(true);
    // The next window starts from zero; the previous window's counters are dropped.
    expect(await limiter.hit(tenant, 'starter', 'query', now + 60_000)).toMatchObject({ remaining: 3599, exceeded: false });
    await proxy.restore();
    await until('the Redis client reconnects', () => ctx.stores.redis.status === 'ready');
    expect((await limiter.hit(tenant, 'starter', 'query')).exceeded).toBe(false);
    expect(limiter.degraded).toBe(false);
    await proxy.cut();
    await until('the Redis client notices', () => ctx.stores.redis.status !== 'ready');
  });

  it('says so: /readyz is 200 degraded, the fallback gauge is 1, and one warning was logged', async () => {
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    const body = ready.json<{ status: string; checks: Record<string, string> }>();
    expect(body.status).toBe('degraded');
    expect(body.checks).toMatchObject({ postgres: 'ok', clickhouse: 'ok' });
    expect(body.checks.redis).toMatch(/^error: /);
    expect(await metricValue(app, 'ratelimit_redis_fallback')).toBe(1);
    expect(await metricValue(app, 'ratelimit_fallback_total')).toBeGreaterThan(0);
    const warnings = lines.filter((l) => l.level === WARN && l.msg?.startsWith('rate limiting falls back'));
    expect(warnings).toHaveLength(1);
    expect(lines.filter((l) => l.level >= ERROR && l.msg === 'request failed')).toEqual([]);
  });

  it('GET /metrics answers without queue depths rather than waiting for Redis', async () => {
    const { res, ms } = await timed(app, { method: 'GET', url: '/metrics' });
    console.log(`redis cut: GET /metrics ${res.statusCode} ${ms} ms`);
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toMatch(/^queue_jobs\{/m);
  });

  it('recovers: Redis counts again, one info line says so, /readyz is ready and queue depths return', async () => {
    await proxy.restore();
    await until('the Redis client reconnects', () => ctx.stores.redis.status === 'ready');
    for (const [name, res] of await callAll(app, table, 'redis restored')) {
      expect(res.statusCode, `${name}: ${res.body.slice(0, 300)}`).toBe(successOf(name));
      expectRateLimitHeaders(res, name);
    }
    expect(await metricValue(app, 'ratelimit_redis_fallback')).toBe(0);
    expect(lines.filter((l) => l.msg === 'rate limiting uses Redis again')).toHaveLength(1);
    expect(lines.filter((l) => l.level === WARN && l.msg?.startsWith('rate limiting falls back'))).toHaveLength(1);
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok', clickhouse: 'ok' } });
    await until('queue depths are scraped again', async () => (await metricValue(app, 'queue_jobs')) !== undefined);
  });
});

describe('Redis stops answering (connections open, nothing comes back)', () => {
  let fixture: Awaited<ReturnType<typeof proxiedApp>> | undefined;
  let proxy: TcpProxy;
  let ctx: TestContext;
  let app: App;
  let lines: LogLine[];
  let table: RouteTable;

  beforeAll(async () => {
    fixture = await proxiedApp('REDIS_URL', 6379);
    ({ proxy, ctx, app, lines, table } = fixture);
    expect(await metricValue(app, 'queue_jobs')).toBeDefined();
    proxy.stall();
  });
  afterAll(async () => closeProxiedApp(fixture));

  it('every route still answers, with rate-limit headers', async () => {
    expect(ctx.stores.redis.status).toBe('ready'); // the client cannot tell: only time-outs can
    for (const [name, res] of await callAll(app, table, 'redis stalled')) {
      expect(res.statusCode, `${name}: ${res.body.slice(0, 300)}`).toBe(successOf(name));
      expectRateLimitHeaders(res, name);
    }
    expect(await metricValue(app, 'ratelimit_fallback_total{reason="timeout"}')).toBeGreaterThan(0);
    expect(await metricValue(app, 'ratelimit_redis_fallback')).toBe(1);
    expect(lines.filter((l) => l.level === WARN && l.msg?.startsWith('rate limiting falls back'))).toHaveLength(1);
  });

  it('/readyz and GET /metrics answer rather than wait', async () => {
    const ready = await timed(app, { method: 'GET', url: '/readyz' });
    const scrape = await timed(app, { method: 'GET', url: '/metrics' });
    console.log(`redis stalled: GET /readyz ${ready.res.statusCode} ${ready.ms} ms; GET /metrics ${scrape.res.statusCode} ${scrape.ms} ms`);
    expect(ready.res.statusCode).toBe(200);
    expect(ready.res.json()).toMatchObject({ status: 'degraded', checks: { postgres: 'ok', clickhouse: 'ok' } });
    expect(scrape.res.statusCode).toBe(200);
  });

  it('recovers once Redis answers again', async () => {
    await proxy.restore();
    // Requests skip Redis for a moment after a time-out; the first one after that uses it again.
    await until('rate limiting uses Redis again', async () => {
      const res = await app.inject(table['GET /v1/projects']());
      expect(res.statusCode).toBe(200);
      return (await metricValue(app, 'ratelimit_redis_fallback')) === 0;
    });
    expect(lines.filter((l) => l.msg === 'rate limiting uses Redis again')).toHaveLength(1);
    for (const [name, res] of await callAll(app, table, 'redis answers again')) expect(res.statusCode, name).toBe(successOf(name));
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({ status: 'ready' });
  });
});

/**
 * What each route answers while Postgres is away (refusing or silent), and why. The API key was looked up just before
 * the cut and is cached in-process for 30 s (platform/auth.ts), so requests still authenticate.
 */
const WITHOUT_POSTGRES: Record<RouteName, { status: 200 | 201 | 503; why: string }> = {
  'POST /v1/ingest': { status: 503, why: 'ids are reserved in the trace registry (Postgres) before the write' },
  'POST /v1/ingest/batch': { status: 503, why: 'ids are reserved in the trace registry (Postgres) before the write' },
  'POST /v1/otlp/traces (json)': { status: 503, why: 'traces are registered in the trace registry (Postgres) before the write' },
  'POST /v1/otlp/traces (protobuf)': { status: 503, why: 'traces are registered in the trace registry (Postgres) before the write' },
  'GET /v1/traces': { status: 200, why: 'the list reads ClickHouse only' },
  'GET /v1/traces/{id}': { status: 503, why: 'the trace is located (project, time) in the registry (Postgres)' },
  'GET /v1/traces/export': { status: 200, why: 'the export streams from ClickHouse only' },
  'GET /v1/metrics': { status: 200, why: 'metrics read the ClickHouse rollup only' },
  'GET /v1/metrics (group_by)': { status: 200, why: 'metrics read the ClickHouse rollup only' },
  'GET /v1/sessions': { status: 200, why: 'sessions aggregate ClickHouse traces only' },
  'GET /v1/sessions/{id}': { status: 200, why: 'sessions aggregate ClickHouse traces only' },
  'GET /v1/projects': { status: 503, why: 'projects live in Postgres' },
  'GET /v1/projects/{id}': { status: 503, why: 'projects live in Postgres' },
};

describe('Postgres unreachable', () => {
  let fixture: Awaited<ReturnType<typeof proxiedApp>> | undefined;
  let proxy: TcpProxy;
  let app: App;
  let lines: LogLine[];
  let table: RouteTable;
  let during: Map<string, LightMyRequestResponse>;

  beforeAll(async () => {
    fixture = await proxiedApp('DATABASE_URL', 5432);
    ({ proxy, app, lines, table } = fixture);
    for (const [name, res] of await callAll(app, table, 'postgres reachable')) expect(res.statusCode, name).toBe(successOf(name));
    await proxy.cut();
    during = await callAll(app, table, 'postgres cut');
  });
  afterAll(async () => closeProxiedApp(fixture));

  it.each(ROUTE_NAMES)('%s answers as expected while Postgres is away, never 500', (name) => {
    const res = during.get(name)!;
    const { status, why } = WITHOUT_POSTGRES[name];
    if (status === 503) expectUnavailable(res, `${name} (${why})`);
    else expect(res.statusCode, `${name} (${why}): ${res.body.slice(0, 300)}`).toBe(status);
  });

  it('logs each 503 as a warning naming Postgres, and no request as a failure', async () => {
    const outages = lines.filter((l) => l.level === WARN && l.store !== undefined);
    expect(outages.length).toBeGreaterThan(0);
    expect(new Set(outages.map((l) => l.store))).toEqual(new Set(['postgres']));
    expect(lines.filter((l) => l.level >= ERROR && l.msg === 'request failed')).toEqual([]);
  });

  it('/readyz is 503 unavailable naming Postgres', async () => {
    const { res, ms } = await timed(app, { method: 'GET', url: '/readyz' });
    console.log(`postgres cut: GET /readyz ${res.statusCode} ${ms} ms`);
    expect(res.statusCode).toBe(503);
    const body = res.json<{ status: string; checks: Record<string, string> }>();
    expect(body.status).toBe('unavailable');
    expect(body.checks.postgres).toMatch(/^error: /);
    expect(body.checks).toMatchObject({ redis: 'ok', clickhouse: 'ok' });
  });

  it('an API key that is not cached yet is a 503 too, not a 401 or a 500', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/traces', headers: { authorization: `Bearer lt_${'x'.repeat(40)}` } });
    expectUnavailable(res, 'uncached API key');
  });

  it('recovers: every route answers again once Postgres is back', async () => {
    await proxy.restore();
    for (const [name, res] of await callAll(app, table, 'postgres restored')) {
      expect(res.statusCode, `${name}: ${res.body.slice(0, 300)}`).toBe(successOf(name));
    }
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({ status: 'ready' });
  });
});

describe('Postgres stops answering (connections open, nothing comes back)', () => {
  const DEADLINE_MS = 1_500;
  let fixture: Awaited<ReturnType<typeof proxiedApp>> | undefined;
  let proxy: TcpProxy;
  let app: App;
  let lines: LogLine[];
  let table: RouteTable;
  let during: Map<string, LightMyRequestResponse>;

  beforeAll(async () => {
    fixture = await proxiedApp('DATABASE_URL', 5432, { RESPONSE_DEADLINE_MS: String(DEADLINE_MS) });
    ({ proxy, app, lines, table } = fixture);
    proxy.stall();
    during = await callAll(app, table, 'postgres stalled');
  });
  afterAll(async () => closeProxiedApp(fixture));

  // postgres.js would wait on a silent connection for as long as TCP takes: the response deadline answers instead.
  it.each(ROUTE_NAMES)('%s answers as if Postgres were away, by the response deadline at the latest', (name) => {
    const res = during.get(name)!;
    const { status, why } = WITHOUT_POSTGRES[name];
    if (status === 503) expectUnavailable(res, `${name} (${why})`);
    else expect(res.statusCode, `${name} (${why}): ${res.body.slice(0, 300)}`).toBe(status);
  });

  it('logs those 503s as warnings, none as a failed request', () => {
    expect(lines.filter((l) => l.level === WARN && l.msg?.includes('is not answering')).length).toBeGreaterThan(0);
    expect(lines.filter((l) => l.level >= ERROR && l.msg === 'request failed')).toEqual([]);
    // What Fastify logs when such a handler's store call fails after its answer left: the store's own error.
    const late = lines.filter((l) => l.level >= ERROR);
    expect(late.every((l) => l.msg === 'Promise errored, but reply.sent = true was set'), JSON.stringify(late.map((l) => l.msg))).toBe(true);
  });

  it('recovers once Postgres answers again', async () => {
    await proxy.restore();
    for (const [name, res] of await callAll(app, table, 'postgres answers again')) {
      expect(res.statusCode, `${name}: ${res.body.slice(0, 300)}`).toBe(successOf(name));
    }
  });
});

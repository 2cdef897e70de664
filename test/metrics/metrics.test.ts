import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers } from '../../src/jobs/workers.js';
import { MetricsDirtyTracker, type ClaimedMinute } from '../../src/modules/metrics/dirty.js';
import { metricsRepository } from '../../src/modules/metrics/repo.js';
import { MetricsRollup } from '../../src/modules/metrics/rollup.js';
import { metricsResponse } from '../../src/modules/metrics/schemas.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { queryKeyAuth } from '../builders/resources.js';

// BullMQ queues of this process stay apart from other test processes.
const REDIS_PREFIX = `looptrace-test-metrics-${process.pid}`;
const T0 = Date.parse('2026-10-05T10:00:00.000Z');
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

/** One trace of the fixture: when it starts, what it is, and the numbers the metrics must reflect. */
interface Sample {
  at: number;
  name: string;
  model: string;
  latency: number;
  prompt: number;
  completion: number;
  cost: number;
  error?: boolean;
  project?: string;
}

let ctx: TestContext;
let a: TestTenant;
let aSecondProject: string;
let samples: Sample[];

const sample = (at: number, name: string, model: string, latency: number, extra: Partial<Sample> = {}): Sample => ({
  at,
  name,
  model,
  latency,
  prompt: 10 + (latency % 7),
  completion: 3 + (latency % 5),
  cost: latency / 100_000,
  ...extra,
});

function traceOf(s: Sample, id: string = randomUUID()) {
  const start = new Date(s.at);
  return aTrace({
    id,
    name: s.name,
    ...(s.project ? { project_id: s.project } : {}),
    spans: [
      aSpan(
        {
          model: s.model,
          end_time: new Date(s.at + s.latency).toISOString(),
          prompt_tokens: s.prompt,
          completion_tokens: s.completion,
          cost: s.cost,
          ...(s.error ? { error: 'upstream returned 500' } : {}),
        },
        start,
      ),
    ],
  });
}

async function ingest(t: TestTenant, list: readonly Sample[]): Promise<string[]> {
  const traces = list.map((s) => traceOf(s));
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces } });
  expect(res.statusCode, res.body).toBe(201);
  return traces.map((tr) => tr.id);
}

async function metrics(auth: Record<string, string>, query: Record<string, string | number>) {
  return ctx.app.inject({ method: 'GET', url: '/v1/metrics', headers: auth, query: Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])) });
}

async function okMetrics(query: Record<string, string | number>, auth = a.auth) {
  const res = await metrics(auth, query);
  expect(res.statusCode, res.body).toBe(200);
  return metricsResponse.parse(res.json());
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Tenants of this file. The dirty set is one Postgres table shared by every test process, but each
 * process has its own embedded ClickHouse: a claim here must only take this file's minutes (another
 * file's would be recomputed against the wrong ClickHouse and forgotten), so rollups are scoped.
 */
const ownTenants: string[] = [];
async function newTenant(plan?: Parameters<typeof createTenant>[1]): Promise<TestTenant> {
  const t = await createTenant(ctx.app, plan);
  ownTenants.push(t.tenantId);
  return t;
}
const scopedRollup = () => new MetricsRollup(metricsRepository(ctx.stores.ch), new MetricsDirtyTracker(ctx.stores.sql, { tenantIds: [...ownTenants] }));
const rollup = () => scopedRollup().processDue();

// ---- the oracle: the same aggregation done by hand over the fixture ----

const WIDTH = { minute: MIN, hour: HOUR, day: DAY } as const;

/** DDSketch in ClickHouse estimates the value at 0-based rank ⌊q·(n−1)⌋ within 1% (relative). */
const rankValue = (latencies: number[], q: number) => [...latencies].sort((x, y) => x - y)[Math.floor(q * (latencies.length - 1))]!;

function expectedSeries(list: readonly Sample[], interval: keyof typeof WIDTH, groupOf: (s: Sample) => string | null) {
  const groups = new Map<string | null, Map<number, Sample[]>>();
  for (const s of list) {
    const g = groupOf(s);
    const bucket = Math.floor(s.at / WIDTH[interval]) * WIDTH[interval];
    const buckets = groups.get(g) ?? new Map<number, Sample[]>();
    buckets.set(bucket, [...(buckets.get(bucket) ?? []), s]);
    groups.set(g, buckets);
  }
  return groups;
}

type Series = ReturnType<typeof metricsResponse.parse>['series'][number];

function expectSeriesMatches(series: Series, buckets: Map<number, Sample[]>) {
  expect(series.points.map((p) => p.timestamp)).toEqual([...buckets.keys()].sort((x, y) => x - y).map(iso));
  for (const point of series.points) {
    const list = buckets.get(Date.parse(point.timestamp))!;
    const where = `${JSON.stringify(series.group)} @ ${point.timestamp}`;
    const errors = list.filter((s) => s.error).length;
    const prompt = list.reduce((n, s) => n + s.prompt, 0);
    const completion = list.reduce((n, s) => n + s.completion, 0);
    expect(point, where).toMatchObject({
      trace_count: list.length,
      error_count: errors,
      error_rate: errors / list.length,
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    });
    expect(point.cost, where).toBeCloseTo(list.reduce((n, s) => n + s.cost, 0), 9);
    expect(point.latency_avg_ms, where).toBeCloseTo(list.reduce((n, s) => n + s.latency, 0) / list.length, 2);
    const latencies = list.map((s) => s.latency);
    for (const [q, got] of [[0.5, point.latency_p50_ms], [0.95, point.latency_p95_ms], [0.99, point.latency_p99_ms]] as const) {
      const exact = rankValue(latencies, q);
      expect(Math.abs(got! - exact), `${where} p${q * 100}: ${got} vs ${exact}`).toBeLessThanOrEqual(exact * 0.01 + 0.01);
    }
  }
}

beforeAll(async () => {
  ctx = await startApp({ REDIS_PREFIX });
  a = await newTenant('pro');
  const project = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: a.auth, payload: { name: 'second' } });
  aSecondProject = project.json().id;
  samples = [
    // 10:00 — a spread of latencies for the percentiles, three models, two names, errors.
    ...Array.from({ length: 40 }, (_, i) => sample(T0 + i * 1000, 'chat', 'gpt-4o', 20 + ((i * 37) % 40) * 25, { error: i % 9 === 0 })),
    sample(T0 + 41_000, 'chat', 'claude-3-haiku', 1_000),
    sample(T0 + 42_000, 'embed', 'text-embedding-3-small', 50, { cost: 0.000002 }),
    // 10:01 and 10:59: same hour, other minutes.
    sample(T0 + MIN + 5_000, 'chat', 'gpt-4o', 150),
    sample(T0 + MIN + 6_000, 'chat', 'gpt-4o', 250, { error: true }),
    sample(T0 + MIN + 7_000, 'embed', 'text-embedding-3-small', 60),
    sample(T0 + 59 * MIN + 59_000, 'chat', 'gpt-4o', 500, { error: true }),
    // 11:30 in the second project.
    sample(T0 + 90 * MIN, 'chat', 'claude-3-haiku', 2_000, { project: 'second' }),
    sample(T0 + 90 * MIN + 1_000, 'chat', 'claude-3-haiku', 3_000, { project: 'second' }),
    sample(T0 + 90 * MIN + 2_000, 'summarize', 'gpt-4o', 700, { project: 'second' }),
    // The next day.
    sample(T0 + DAY + 5 * MIN, 'chat', 'gpt-4o', 800),
  ].map((s) => (s.project ? { ...s, project: aSecondProject } : s));
  await ingest(a, samples);
  await rollup();
});

afterAll(async () => {
  if (ctx) {
    await ctx.stores.sql`delete from metrics_dirty_minutes where tenant_id = any(${ownTenants}::uuid[])`;
    const keys = await ctx.stores.redis.keys(`${REDIS_PREFIX}:*`);
    if (keys.length > 0) await ctx.stores.redis.del(...keys);
    await ctx.close();
  }
});

const projectOf = (s: Sample) => s.project ?? a.projectId;

describe('GET /v1/metrics', () => {
  it('answers exact counts, tokens, cost and error rate, and percentiles within 1%, per minute', async () => {
    const body = await okMetrics({ from: iso(T0), to: iso(T0 + 2 * HOUR), interval: 'minute' });
    expect(body).toMatchObject({ interval: 'minute', from: iso(T0), to: iso(T0 + 2 * HOUR), group_by: null, project_id: null, has_more_groups: false });
    expect(body.series).toHaveLength(1);
    expect(body.series[0]!.group).toBeNull();
    const inRange = samples.filter((s) => s.at < T0 + 2 * HOUR);
    expectSeriesMatches(body.series[0]!, expectedSeries(inRange, 'minute', () => null).get(null)!);
  });

  it('buckets by hour and by day, aligned to UTC', async () => {
    const hourly = await okMetrics({ from: iso(T0 + 10 * MIN), to: iso(T0 + 2 * HOUR - 1), interval: 'hour' });
    expect([hourly.from, hourly.to]).toEqual([iso(T0), iso(T0 + 2 * HOUR)]);
    expectSeriesMatches(hourly.series[0]!, expectedSeries(samples.filter((s) => s.at < T0 + 2 * HOUR), 'hour', () => null).get(null)!);

    const daily = await okMetrics({ from: iso(T0), to: iso(T0 + 2 * DAY), interval: 'day' });
    expect(daily.from).toBe('2026-10-05T00:00:00.000Z');
    expect(daily.series[0]!.points.map((p) => p.trace_count)).toEqual([samples.length - 1, 1]);
    expectSeriesMatches(daily.series[0]!, expectedSeries(samples, 'day', () => null).get(null)!);
  });

  it('groups by model, project and name, largest group first', async () => {
    const cases = [
      ['model', (s: Sample) => s.model, (g: string) => ({ model: g })],
      ['project', projectOf, (g: string) => ({ project_id: g })],
      ['name', (s: Sample) => s.name, (g: string) => ({ name: g })],
    ] as const;
    for (const [groupBy, groupOf, groupBody] of cases) {
      const body = await okMetrics({ from: iso(T0), to: iso(T0 + 3 * HOUR), interval: 'hour', group_by: groupBy });
      const expected = expectedSeries(samples.filter((s) => s.at < T0 + 3 * HOUR), 'hour', groupOf);
      const bySize = [...expected.entries()]
        .map(([g, b]) => [g!, [...b.values()].flat().length] as const)
        .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1));
      expect(body.series.map((s) => s.group), groupBy).toEqual(bySize.map(([g]) => groupBody(g)));
      for (const series of body.series) expectSeriesMatches(series, expected.get(Object.values(series.group!)[0]!)!);
    }
  });

  it('filters by project and cuts groups at group_limit', async () => {
    const body = await okMetrics({ from: iso(T0), to: iso(T0 + 3 * HOUR), interval: 'hour', project_id: aSecondProject, group_by: 'model', group_limit: 1 });
    expect(body.project_id).toBe(aSecondProject);
    expect(body.has_more_groups).toBe(true);
    expect(body.series.map((s) => s.group)).toEqual([{ model: 'claude-3-haiku' }]);
    expect(body.series[0]!.points.map((p) => [p.timestamp, p.trace_count])).toEqual([[iso(T0 + HOUR), 2]]);
  });

  it('never shows another tenant its data, nor a rollup of another tenant', async () => {
    const before = await okMetrics({ from: iso(T0), to: iso(T0 + DAY), interval: 'hour', group_by: 'model' });
    const b = await newTenant('starter');
    await ingest(b, [sample(T0 + 3_000, 'chat', 'gpt-4o', 9_999, { error: true }), sample(T0 + MIN, 'other', 'mistral-large', 77)]);
    await rollup();
    expect(await okMetrics({ from: iso(T0), to: iso(T0 + DAY), interval: 'hour', group_by: 'model' })).toEqual(before);
    const theirs = await okMetrics({ from: iso(T0), to: iso(T0 + DAY), interval: 'hour' }, b.auth);
    expect(theirs.series[0]!.points).toHaveLength(1);
    expect(theirs.series[0]!.points[0]).toMatchObject({ trace_count: 2, error_count: 1 });
    // A project of tenant A is unknown to tenant B.
    expect((await metrics(b.auth, { project_id: a.projectId })).statusCode).toBe(404);
  });

  it('is idempotent: recomputing a minute again changes nothing', async () => {
    const query = { from: iso(T0), to: iso(T0 + 2 * HOUR), interval: 'minute', group_by: 'name' };
    const before = await okMetrics(query);
    await ctx.app.services.metricsRollup.recompute(a.tenantId, [T0, T0 + MIN, T0 + 59 * MIN]);
    await ctx.app.services.metricsRollup.recompute(a.tenantId, [T0]);
    expect(await okMetrics(query)).toEqual(before);
  });

  it('answers 400 naming the parameter for bad input', async () => {
    const cases: [Record<string, string | number>, string][] = [
      [{ interval: 'week' }, 'query.interval'],
      [{ from: 'yesterday' }, 'query.from'],
      [{ to: '2026-13-01T00:00:00Z' }, 'query.to'],
      [{ from: iso(T0), to: iso(T0 - HOUR) }, 'query.to'],
      [{ from: iso(T0), to: iso(T0 + 2 * DAY), interval: 'minute' }, 'query.from'],
      [{ from: '1900-01-01T00:00:00Z', to: '1900-01-02T00:00:00Z' }, 'query.from'],
      [{ project_id: 'not-a-uuid' }, 'query.project_id'],
      [{ group_by: 'color' }, 'query.group_by'],
      [{ group_by: 'model', group_limit: 0 }, 'query.group_limit'],
    ];
    for (const [query, parameter] of cases) {
      const res = await metrics(a.auth, query);
      expect(res.statusCode, JSON.stringify(query)).toBe(400);
      expect(res.json().error, JSON.stringify(query)).toContain(parameter);
    }
    // Exactly 1,440 buckets is allowed.
    expect((await metrics(a.auth, { from: iso(T0), to: iso(T0 + DAY), interval: 'minute' })).statusCode).toBe(200);
  });

  it('is open to viewers and query-scoped keys, on the query rate bucket (60/s starter, 600/s pro)', async () => {
    const viewer = bearer(await sessionToken(a.tenantId, 'viewer'));
    expect((await metrics(viewer, {})).statusCode).toBe(200);
    const keyAuth = await queryKeyAuth(ctx.app, a.auth);
    expect((await metrics(keyAuth, {})).statusCode).toBe(200);

    expect((await metrics(a.auth, {})).headers['x-ratelimit-limit']).toBe('36000');
    const starter = await newTenant('starter');
    expect((await metrics(starter.auth, {})).headers['x-ratelimit-limit']).toBe('3600');
  });
});

describe('the rollup under rewritten trace rows', () => {
  let t: TestTenant;
  let list: Sample[];
  let ids: string[];

  async function traceRow(id: string) {
    const [row] = await ctx.stores.ch.rows<Record<string, unknown>>('test', 'SELECT * FROM traces FINAL WHERE tenant_id = {t:UUID} AND is_deleted = 0 AND id = {id:UUID}', {
      t: t.tenantId,
      id,
    });
    return row!;
  }

  beforeAll(async () => {
    t = await newTenant();
    list = [
      sample(T0 + 1_000, 'chat', 'gpt-4o', 100),
      sample(T0 + 2_000, 'chat', 'gpt-4o', 200),
      sample(T0 + 3_000, 'chat', 'claude-3-haiku', 300),
      sample(T0 + MIN + 1_000, 'chat', 'gpt-4o', 400),
    ];
    ids = await ingest(t, list);
    await rollup();
  });

  const byModel = () => okMetrics({ from: iso(T0), to: iso(T0 + HOUR), interval: 'minute', group_by: 'model' }, t.auth);

  it('counts a new version of a trace once, with its new numbers, and drops the group it left', async () => {
    const before = await byModel();
    expect(before.series.map((s) => [s.group, s.points.map((p) => p.trace_count)])).toEqual([
      [{ model: 'gpt-4o' }, [2, 1]],
      [{ model: 'claude-3-haiku' }, [1]],
    ]);
    // What the OTLP rollup does: a newer version of the same row, other model and latency.
    const old = await traceRow(ids[2]!);
    await ctx.stores.ch.insert('traces', [{ ...old, model: 'gpt-4o', latency_ms: 3_000, error: 'late failure', version: Number(old.version) + 1 }]);
    await ctx.app.services.metricsDirty.mark(t.tenantId, [list[2]!.at]);
    await rollup();

    const after = await byModel();
    expect(after.series.map((s) => s.group)).toEqual([{ model: 'gpt-4o' }]);
    const rewritten = { ...list[2]!, model: 'gpt-4o', latency: 3_000, error: true };
    expectSeriesMatches(after.series[0]!, expectedSeries([list[0]!, list[1]!, rewritten, list[3]!], 'minute', () => null).get(null)!);
    // The vanished group is overwritten with zeros, so even a plain FINAL read does not count it.
    const stale = await ctx.stores.ch.rows<{ n: string }>(
      'test',
      "SELECT sum(trace_count) AS n FROM trace_metrics_1m FINAL WHERE tenant_id = {t:UUID} AND model = 'claude-3-haiku'",
      { t: t.tenantId },
    );
    expect(Number(stale[0]!.n)).toBe(0);
  });

  it('moves a trace whose start moved to another minute, counting it once', async () => {
    const old = await traceRow(ids[0]!);
    const movedAt = T0 + 5 * MIN + 30_000;
    // The old row has another sorting key: it is deleted and the new one written.
    await ctx.stores.ch.command('test', 'DELETE FROM traces WHERE tenant_id = {t:UUID} AND id = {id:UUID} AND version = {v:UInt64}', {
      t: t.tenantId,
      id: ids[0],
      v: old.version,
    });
    await ctx.stores.ch.insert('traces', [{ ...old, started_at: new Date(movedAt).toISOString().replace('T', ' ').slice(0, 23), version: Number(old.version) + 1 }]);
    await ctx.app.services.metricsDirty.mark(t.tenantId, [list[0]!.at, movedAt]);
    await rollup();

    const body = await okMetrics({ from: iso(T0), to: iso(T0 + HOUR), interval: 'minute' }, t.auth);
    expect(body.series[0]!.points.map((p) => [p.timestamp, p.trace_count])).toEqual([
      [iso(T0), 2],
      [iso(T0 + MIN), 1],
      [iso(T0 + 5 * MIN), 1],
    ]);
    const hourly = await okMetrics({ from: iso(T0), to: iso(T0 + HOUR), interval: 'hour' }, t.auth);
    expect(hourly.series[0]!.points[0]!.trace_count).toBe(4);
  });

  it('ignores a recomputation that lands after a newer one (older version)', async () => {
    const before = await byModel();
    // A slow, older recomputation of 10:00 committing late: its rows carry an older version.
    await ctx.stores.ch.command(
      'test',
      `INSERT INTO trace_metrics_1m (tenant_id, project_id, minute, model, name, trace_count, error_count, prompt_tokens,
         completion_tokens, cost, latency_ms_sum, latency_ms, version)
       SELECT {t:UUID}, {p:UUID}, {m:DateTime('UTC')}, 'ghost-model', 'chat', 50, 50, 1, 1, 1, 50,
         arrayReduce('quantilesDDState(0.01, 0.5, 0.95, 0.99)', [toUInt64(1)]), 1`,
      { t: t.tenantId, p: t.projectId, m: '2026-10-05 10:00:00' },
    );
    expect(await byModel()).toEqual(before);
  });
});

describe('MetricsDirtyTracker', () => {
  // Fixed times in the past: rows marked by other test files (due at the real clock) are never due here.
  const now = Date.parse('2026-11-01T00:00:00Z');
  const LEASE = 5_000;
  /** A tracker over the shared table, claiming only `tenants` (fresh per test; see ownTenants). */
  const tracker = (tenants: readonly string[], sql = ctx.stores.sql) => new MetricsDirtyTracker(sql, { leaseMs: LEASE, tenantIds: tenants });
  const freshTenant = () => {
    const id = randomUUID();
    ownTenants.push(id);
    return id;
  };
  const minutes = (claimed: readonly ClaimedMinute[]) => claimed.map((c) => c.minuteMs).sort((x, y) => x - y);
  const stored = (tenants: readonly string[]) => ctx.stores.sql<{ tenant_id: string; minute: Date; generation: number; due_at: Date }[]>`
    select tenant_id, minute, generation, due_at from metrics_dirty_minutes where tenant_id = any(${[...tenants]}::uuid[])
    order by tenant_id, minute`;

  it('claims due minutes once and keeps a minute marked again while it was being recomputed', async () => {
    const tenant = freshTenant();
    const dirty = tracker([tenant]);
    await dirty.mark(tenant, [T0 + 1_000, T0 + 59_000, T0 + MIN], now);
    const claimed = await dirty.claim(10, now);
    expect(claimed.map((c) => c.tenantId)).toEqual([tenant, tenant]);
    expect(minutes(claimed)).toEqual([T0, T0 + MIN]);
    expect(await dirty.claim(10, now + 1)).toEqual([]); // leased
    await dirty.mark(tenant, [T0], now + 2); // new data in 10:00 while it is being recomputed
    await dirty.complete(claimed);
    expect((await stored([tenant])).map((r) => r.minute.getTime())).toEqual([T0]);
    const again = await dirty.claim(10, now + 3);
    expect(minutes(again)).toEqual([T0]);
    await dirty.complete(again);
    expect(await stored([tenant])).toEqual([]);
  });

  it('never postpones a due minute, and claims the oldest due first across tenants', async () => {
    const [t1, t2] = [freshTenant(), freshTenant()];
    const dirty = tracker([t1, t2]);
    await dirty.mark(t1, [T0], now + 20);
    await dirty.mark(t2, [T0], now + 10);
    await dirty.mark(t1, [T0 + MIN], now);
    await dirty.mark(t1, [T0 + MIN], now + 30); // a later mark of a due minute keeps it due since `now`
    const first = await dirty.claim(2, now + 30);
    expect(first.map((c) => [c.tenantId, c.minuteMs]).sort()).toEqual([[t1, T0 + MIN], [t2, T0]].sort());
    expect(first.find((c) => c.tenantId === t1)!.generation).toBe(2);
    const rest = await dirty.claim(2, now + 30);
    expect(rest.map((c) => [c.tenantId, c.minuteMs])).toEqual([[t1, T0]]);
    await dirty.complete([...first, ...rest]);
    expect(await stored([t1, t2])).toEqual([]);
  });

  it('hands a minute out again once its lease expires (a crashed worker), and at once when it is marked', async () => {
    const tenant = freshTenant();
    const dirty = tracker([tenant]);
    await dirty.mark(tenant, [T0], now);
    expect(await dirty.claim(10, now)).toHaveLength(1);
    expect(await dirty.claim(10, now + LEASE - 1)).toHaveLength(0);
    const second = await dirty.claim(10, now + LEASE);
    expect(minutes(second)).toEqual([T0]);
    expect(await dirty.claim(10, now + LEASE + 1)).toHaveLength(0);
    await dirty.mark(tenant, [T0], now + LEASE + 2); // marked while leased: due at once, not at the lease's end
    const third = await dirty.claim(10, now + LEASE + 2);
    expect(minutes(third)).toEqual([T0]);
    await dirty.complete(second); // stale: the minute was marked since that claim
    expect(await stored([tenant])).toHaveLength(1);
    await dirty.complete(third);
    expect(await stored([tenant])).toEqual([]);
  });

  it('never gives the same minute to two concurrent claimers (unscoped, as the rollup job claims)', async () => {
    const tenant = freshTenant();
    // Unscoped claimers see every due row, so they run at a random instant of 2001: rows of other
    // files are due at the real clock, and this test's own earlier runs are completed below.
    const at = Date.UTC(2001, 0, 1) + Math.floor(Math.random() * 364 * DAY);
    const marked = Array.from({ length: 300 }, (_, i) => T0 + i * MIN);
    await tracker([tenant]).mark(tenant, marked, at);
    const claimers = Array.from({ length: 4 }, () => new MetricsDirtyTracker(ctx.stores.sql, { leaseMs: LEASE }));
    const claimed: ClaimedMinute[] = [];
    try {
      for (let round = 0; round < 20; round += 1) {
        const batches = await Promise.all(claimers.map((c) => c.claim(25, at)));
        claimed.push(...batches.flat());
        if (batches.every((b) => b.length === 0)) break;
      }
      const keys = claimed.map((c) => `${c.tenantId}|${c.minuteMs}`);
      expect(new Set(keys).size).toBe(keys.length);
      expect(minutes(claimed.filter((c) => c.tenantId === tenant))).toEqual(marked);
    } finally {
      await claimers[0]!.complete(claimed);
    }
    expect(await stored([tenant])).toEqual([]);
  });

  it('marks many rows of two tenants in one statement, each minute once', async () => {
    const [t1, t2] = [freshTenant(), freshTenant()];
    let statements = 0;
    const counting = new Proxy(ctx.stores.sql, {
      apply(target, self, args) {
        statements += 1;
        return Reflect.apply(target, self, args) as unknown;
      },
    });
    const dirty = tracker([t1, t2], counting);
    // 1,200 rows over 40 minutes per tenant, both started_at forms, in no particular order.
    const rows = Array.from({ length: 1_200 }, (_, i) => {
      const startedAt = new Date(T0 + ((i * 7) % 40) * MIN + ((i * 997) % MIN));
      const written = i % 2 === 0 ? startedAt.toISOString().replace('T', ' ').slice(0, 23) : startedAt.toISOString();
      return { tenant_id: i % 3 === 0 ? t2 : t1, started_at: written };
    });
    await dirty.markRows(rows, now);
    expect(statements).toBe(1);
    const all = Array.from({ length: 40 }, (_, i) => T0 + i * MIN);
    const byTenant = (tenant: string) => (r: { tenant_id: string }) => r.tenant_id === tenant;
    const rowsAfter = await stored([t1, t2]);
    for (const tenant of [t1, t2]) {
      expect(rowsAfter.filter(byTenant(tenant)).map((r) => [r.minute.getTime(), r.generation])).toEqual(all.map((m) => [m, 1]));
    }
    expect(rowsAfter.every((r) => r.due_at.getTime() === now)).toBe(true);
    // A second group commit touching some of those minutes bumps only theirs.
    await dirty.markRows([rows[0]!, rows[1]!], now + 1);
    expect((await stored([t1, t2])).filter((r) => r.generation === 2)).toHaveLength(2);
    await dirty.complete(await dirty.claim(1_000, now + 1));
    expect(await stored([t1, t2])).toEqual([]);
  });

  it('marks inside the caller\'s transaction: seen once it commits, gone when it rolls back', async () => {
    const tenant = freshTenant();
    const dirty = tracker([tenant]);
    const row = { tenant_id: tenant, started_at: '2026-10-05 10:00:30.000' };
    let seenInside: unknown[] = ['not run'];
    await ctx.stores.sql.begin(async (tx) => {
      await dirty.markRowsIn(tx, [row]);
      seenInside = await stored([tenant]); // another connection: not committed yet
    });
    expect(seenInside).toEqual([]);
    const due = await dirty.claim(10);
    expect(due.map((c) => [c.tenantId, c.minuteMs])).toEqual([[tenant, T0]]);
    await dirty.complete(due);

    const failed = ctx.stores.sql.begin(async (tx) => {
      await dirty.markRowsIn(tx, [row]);
      throw new Error('ClickHouse is down');
    });
    await expect(failed).rejects.toThrow('ClickHouse is down');
    const bad = { tenant_id: tenant, started_at: '2026-13-45 10:00:30.000' };
    await expect(ctx.stores.sql.begin((tx) => dirty.markRowsIn(tx, [bad]))).rejects.toThrow(RangeError);
    expect(await stored([tenant])).toEqual([]);
  });
});

describe('the metrics-rollup job', () => {
  it('runs on the workers and brings new traces into GET /v1/metrics', async () => {
    const t = await newTenant();
    const workers = await startWorkers(ctx.app.services, ctx.stores, ctx.app.log);
    try {
      await ingest(t, [sample(T0 + 7_000, 'chat', 'gpt-4o', 123)]);
      let count = 0;
      for (let attempt = 0; attempt < 150 && count === 0; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        const body = await okMetrics({ from: iso(T0), to: iso(T0 + HOUR) }, t.auth);
        count = body.series[0]!.points[0]?.trace_count ?? 0;
      }
      expect(count).toBe(1);
    } finally {
      await workers.close();
    }
  });
});

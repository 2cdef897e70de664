import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANS } from '../../src/platform/plans.js';
import { traceDetail, traceList } from '../../src/modules/traces/schemas.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { getJson, ingestTraces, listAll, newestFirst, type QueryValues } from '../helpers/trace-api.js';
import { queryKeyAuth } from '../builders/resources.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const at = (iso: string, plusMs = 0) => new Date(Date.parse(iso) + plusMs).toISOString();

/** A one-span trace starting at `start` and lasting `latencyMs`. */
function timedTrace(start: string, latencyMs: number, overrides: Record<string, unknown> = {}, span: Record<string, unknown> = {}) {
  const trace = aTrace({
    ended_at: at(start, latencyMs),
    spans: [aSpan({ start_time: start, end_time: at(start, latencyMs), ...span })],
    ...overrides,
  });
  return { ...trace, started_at: start };
}

async function listIds(t: TestTenant, query: QueryValues): Promise<string[]> {
  const { status, body } = await getJson(ctx.app, t, '/v1/traces', { limit: 1000, ...query });
  expect(status, JSON.stringify(body)).toBe(200);
  return body.traces.map((x: { id: string }) => x.id);
}

describe('GET /v1/traces filters', () => {
  let t: TestTenant;
  const base = '2026-03-10T08:00:00.000Z';
  const traces = {
    timeout: timedTrace(at(base, 0), 100, { name: 'alpha', session_id: 's-1', tags: ['env:prod'] }, { failure_type: 'timeout', error: 'took too long', prompt_tokens: 30, completion_tokens: 20 }),
    rateLimited: timedTrace(at(base, 1_000), 200, { name: 'beta', tag_map: { env: 'staging' } }, { status_code: 429, error: 'slow down', prompt_tokens: 40, completion_tokens: 20 }),
    zeroTokens: timedTrace(at(base, 2_000), 300, { name: 'gamma', tags: ['env:prod-eu', 'region:prod'] }, { prompt_tokens: 0, completion_tokens: 0, model: 'claude-3-5-haiku' }),
    fifteenTokens: timedTrace(at(base, 3_000), 400, { name: 'delta', tags: ['env'] }, { prompt_tokens: 10, completion_tokens: 5 }),
    thirtyTokens: timedTrace(at(base, 4_000), 500, { name: 'delta', session_id: 's-1' }, { prompt_tokens: 20, completion_tokens: 10 }),
  };
  const ids = Object.fromEntries(Object.entries(traces).map(([k, v]) => [k, v.id])) as Record<keyof typeof traces, string>;

  beforeAll(async () => {
    t = await createTenant(ctx.app);
    await ingestTraces(ctx.app, t, Object.values(traces));
  });

  it('lists every trace of the tenant without filters, newest first', async () => {
    expect(await listIds(t, {})).toEqual([ids.thirtyTokens, ids.fifteenTokens, ids.zeroTokens, ids.rateLimited, ids.timeout]);
  });

  it('failure_type matches traces with a span of that type', async () => {
    expect(await listIds(t, { failure_type: 'timeout' })).toEqual([ids.timeout]);
    expect(await listIds(t, { failure_type: 'rate_limit' })).toEqual([ids.rateLimited]);
    expect(await listIds(t, { failure_type: 'context_length' })).toEqual([]);
  });

  it('latency_min and latency_max are inclusive', async () => {
    expect(await listIds(t, { latency_min: 300 })).toEqual([ids.thirtyTokens, ids.fifteenTokens, ids.zeroTokens]);
    expect(await listIds(t, { latency_max: 200 })).toEqual([ids.rateLimited, ids.timeout]);
    expect(await listIds(t, { latency_min: 200, latency_max: 200 })).toEqual([ids.rateLimited]);
  });

  it('token_count bounds are inclusive and any non-zero minimum excludes 0-token traces', async () => {
    const all = await listIds(t, { token_count_min: 0 });
    expect(all).toContain(ids.zeroTokens);
    expect(await listIds(t, { token_count_min: 1 })).not.toContain(ids.zeroTokens);
    expect(await listIds(t, { token_count_min: 15, token_count_max: 15 })).toEqual([ids.fifteenTokens]);
    expect(await listIds(t, { token_count_max: 15 })).toEqual([ids.fifteenTokens, ids.zeroTokens]);
    expect(await listIds(t, { token_count_min: 30, token_count_max: 50 })).toEqual([ids.thirtyTokens, ids.timeout]);
    expect(await listIds(t, { token_count_min: 61 })).toEqual([]);
  });

  it('tag_key + tag_value match only the exact pair, from tags and tag_map alike', async () => {
    expect(await listIds(t, { tag_key: 'env', tag_value: 'prod' })).toEqual([ids.timeout]);
    expect(await listIds(t, { tag_key: 'env', tag_value: 'staging' })).toEqual([ids.rateLimited]);
    expect(await listIds(t, { tag_key: 'region', tag_value: 'prod' })).toEqual([ids.zeroTokens]);
    expect(await listIds(t, { tag_key: 'env', tag_value: 'pro' })).toEqual([]);
    expect(await listIds(t, { tag_key: 'en', tag_value: 'v:prod' })).toEqual([]);
  });

  it('from and to bound started_at inclusively', async () => {
    expect(await listIds(t, { from: at(base, 3_000) })).toEqual([ids.thirtyTokens, ids.fifteenTokens]);
    expect(await listIds(t, { to: at(base, 1_000) })).toEqual([ids.rateLimited, ids.timeout]);
    expect(await listIds(t, { from: at(base, 1_000), to: at(base, 1_000) })).toEqual([ids.rateLimited]);
    // A bound with an offset is the same instant.
    expect(await listIds(t, { from: '2026-03-10T09:00:04.000+01:00' })).toEqual([ids.thirtyTokens]);
  });

  it('name, session_id and model match exactly', async () => {
    expect(await listIds(t, { name: 'delta' })).toEqual([ids.thirtyTokens, ids.fifteenTokens]);
    expect(await listIds(t, { name: 'delt' })).toEqual([]);
    expect(await listIds(t, { session_id: 's-1' })).toEqual([ids.thirtyTokens, ids.timeout]);
    expect(await listIds(t, { model: 'claude-3-5-haiku' })).toEqual([ids.zeroTokens]);
  });

  it('combines filters with AND', async () => {
    expect(await listIds(t, { name: 'delta', token_count_max: 15 })).toEqual([ids.fifteenTokens]);
    expect(await listIds(t, { session_id: 's-1', failure_type: 'timeout', latency_max: 100 })).toEqual([ids.timeout]);
  });

  it('project_id keeps one project of the tenant', async () => {
    const created = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: 'second' } });
    const other = created.json().id as string;
    const elsewhere = timedTrace(at(base, 5_000), 10, { project_id: other });
    await ingestTraces(ctx.app, t, [elsewhere]);
    expect(await listIds(t, { project_id: other })).toEqual([elsewhere.id]);
    expect(await listIds(t, { project_id: t.projectId })).not.toContain(elsewhere.id);
  });
});

describe('GET /v1/traces validation', () => {
  let t: TestTenant;
  beforeAll(async () => {
    t = await createTenant(ctx.app);
  });

  const expect400 = async (query: QueryValues, naming: string, code = 'bad_request') => {
    const { status, body } = await getJson(ctx.app, t, '/v1/traces', query);
    expect(status, JSON.stringify(body)).toBe(400);
    expect(body.code).toBe(code);
    expect(body.error).toContain(naming);
    expect(typeof body.request_id).toBe('string');
  };

  it('refuses one of tag_key and tag_value without the other with error.tags_filter_incomplete', async () => {
    await expect400({ tag_key: 'env' }, 'tag_value', 'error.tags_filter_incomplete');
    await expect400({ tag_value: 'prod' }, 'tag_key', 'error.tags_filter_incomplete');
  });

  it('limits tag_value to 1..200 characters', async () => {
    await expect400({ tag_key: 'env', tag_value: 'x'.repeat(201) }, 'query.tag_value');
    await expect400({ tag_key: 'env', tag_value: '' }, 'query.tag_value');
    const { status } = await getJson(ctx.app, t, '/v1/traces', { tag_key: 'env', tag_value: 'x'.repeat(200) });
    expect(status).toBe(200);
  });

  it('refuses min > max, naming the maximum', async () => {
    await expect400({ latency_min: 10, latency_max: 9 }, 'query.latency_max');
    await expect400({ token_count_min: 2, token_count_max: 1 }, 'query.token_count_max');
    const equal = await getJson(ctx.app, t, '/v1/traces', { latency_min: 10, latency_max: 10 });
    expect(equal.status).toBe(200);
  });

  it('refuses negative and non-integer bounds, naming the parameter', async () => {
    await expect400({ latency_min: -1 }, 'query.latency_min');
    await expect400({ latency_max: 1.5 }, 'query.latency_max');
    await expect400({ token_count_min: -5 }, 'query.token_count_min');
    await expect400({ token_count_max: 'many' }, 'query.token_count_max');
  });

  it('refuses from after to, unknown failure types, bad dates, ids and limits', async () => {
    await expect400({ from: '2026-02-02T00:00:00Z', to: '2026-02-01T00:00:00Z' }, 'query.to');
    await expect400({ failure_type: 'meltdown' }, 'query.failure_type');
    await expect400({ from: 'yesterday' }, 'query.from');
    await expect400({ project_id: 'not-a-uuid' }, 'query.project_id');
    await expect400({ limit: 1001 }, 'query.limit');
    await expect400({ limit: 0 }, 'query.limit');
  });

  it('refuses a malformed cursor and a cursor of another listing', async () => {
    await expect400({ cursor: 'not-a-cursor' }, 'cursor', 'invalid_cursor');
    const start = '2026-04-01T00:00:00.000Z';
    await ingestTraces(ctx.app, t, [timedTrace(start, 5, { name: 'n' }), timedTrace(at(start, 1), 5, { name: 'n' })]);
    const first = await getJson(ctx.app, t, '/v1/traces', { limit: 1, name: 'n' });
    expect(first.body.has_more).toBe(true);
    await expect400({ limit: 1, cursor: first.body.next_cursor }, 'cursor', 'invalid_cursor');
    const next = await getJson(ctx.app, t, '/v1/traces', { limit: 5, name: 'n', cursor: first.body.next_cursor });
    expect(next.status).toBe(200);
  });
});

describe('GET /v1/traces ordering and keyset pagination', () => {
  it('orders by started_at desc, id desc and pages through ties without skipping or repeating', async () => {
    const t = await createTenant(ctx.app);
    const tie = '2026-05-05T05:05:05.005Z';
    const batch = [
      ...Array.from({ length: 7 }, () => timedTrace(tie, 50)),
      timedTrace(at(tie, 1), 50),
      timedTrace(at(tie, -1), 50),
      timedTrace(at(tie, 86_400_000), 50),
      timedTrace(at(tie, -40 * 86_400_000), 50),
    ];
    await ingestTraces(ctx.app, t, batch);
    const expected = newestFirst(batch.map((b) => ({ id: b.id, started_at: b.started_at }))).map((b) => b.id);

    for (const limit of [1, 2, 3, 4]) {
      const pages = await listAll(ctx.app, t, '/v1/traces', 'traces', { limit });
      for (const page of pages.slice(0, -1)) expect(page).toHaveLength(limit);
      expect(pages.flat().map((x) => x.id), `limit ${limit}`).toEqual(expected);
    }
    const whole = await getJson(ctx.app, t, '/v1/traces', { limit: 11 });
    expect(whole.body.has_more).toBe(false);
    expect(whole.body.next_cursor).toBeNull();
  });

  it('pages across recent and old traces alike (now-relative times)', async () => {
    const t = await createTenant(ctx.app);
    const now = Date.now();
    const ago = (ms: number) => new Date(now - ms).toISOString();
    const batch = [
      timedTrace(new Date(now + 3_600_000).toISOString(), 5), // a client clock ahead of ours
      timedTrace(ago(60_000), 5),
      timedTrace(ago(2 * 3_600_000), 5),
      timedTrace(ago(3 * 86_400_000), 5),
      timedTrace(ago(20 * 86_400_000), 5),
      timedTrace(ago(400 * 86_400_000), 5),
    ];
    await ingestTraces(ctx.app, t, batch);
    const expected = newestFirst(batch.map((b) => ({ id: b.id, started_at: b.started_at }))).map((b) => b.id);
    expect(await listIds(t, {})).toEqual(expected);
    const pages = await listAll(ctx.app, t, '/v1/traces', 'traces', { limit: 1 });
    expect(pages.flat().map((x) => x.id)).toEqual(expected);
  });

  it('defaults to 50 per page', async () => {
    const t = await createTenant(ctx.app);
    await ingestTraces(ctx.app, t, Array.from({ length: 51 }, (_, i) => timedTrace(at('2026-06-01T00:00:00.000Z', i), 5)));
    const { body } = await getJson(ctx.app, t, '/v1/traces');
    expect(body.traces).toHaveLength(50);
    expect(body.has_more).toBe(true);
  });
});

describe('GET /v1/traces versions', () => {
  it('shows only the latest version of a trace row, once', async () => {
    const t = await createTenant(ctx.app);
    const trace = timedTrace('2026-07-07T07:00:00.000Z', 80, { name: 'first version' });
    await ingestTraces(ctx.app, t, [trace]);
    const ch = ctx.stores.ch;
    // Keep both versions as separate rows, as they are until a background merge collapses them.
    await ch.command('test.stop_merges', 'SYSTEM STOP MERGES traces');
    try {
      await ch.command(
        'test.new_version',
        `INSERT INTO traces SELECT * REPLACE ('second version' AS name, version + 1 AS version)
         FROM traces WHERE tenant_id = {t:UUID} AND id = {id:UUID}`,
        { t: t.tenantId, id: trace.id },
      );
      const stored = await ch.rows<{ n: number }>('test.count', 'SELECT count() AS n FROM traces WHERE tenant_id = {t:UUID}', { t: t.tenantId });
      expect(Number(stored[0]?.n)).toBe(2);
      const { body } = await getJson(ctx.app, t, '/v1/traces');
      expect(body.traces.map((x: { id: string; name: string }) => [x.id, x.name])).toEqual([[trace.id, 'second version']]);
      const filtered = await getJson(ctx.app, t, '/v1/traces', { name: 'first version' });
      expect(filtered.body.traces).toEqual([]);
      const detail = await getJson(ctx.app, t, `/v1/traces/${trace.id}`);
      expect(detail.body.name).toBe('second version');
    } finally {
      await ch.command('test.start_merges', 'SYSTEM START MERGES traces');
    }
  });
});

describe('GET /v1/traces response shape', () => {
  it('returns every Trace field of the spec except spans and control_loop_depth', async () => {
    const t = await createTenant(ctx.app);
    const trace = timedTrace(
      '2026-08-08T08:08:08.008Z',
      1_234,
      {
        input: { q: 'structured' },
        output: 'plain',
        session_id: 'sess',
        external_id: 'ext-1',
        tags: ['env:prod', 'beta'],
        tag_map: { team: 'search' },
        metadata: { user: 'u1', nested: { a: 1 } },
      },
      { cost: 0.25, prompt_tokens: 7, completion_tokens: 3, error: 'Request timed out' },
    );
    await ingestTraces(ctx.app, t, [trace]);
    const { body } = await getJson(ctx.app, t, '/v1/traces');
    expect(traceList.safeParse(body).success).toBe(true);
    const [listed] = body.traces;
    expect(Object.keys(listed)).toEqual([
      'id', 'project_id', 'error', 'tags', 'tag_map', 'started_at', 'ended_at', 'session_id', 'external_id', 'name',
      'input', 'output', 'model', 'latency_ms', 'cost', 'total_token_count', 'prompt_tokens_total',
      'completion_tokens_total', 'metadata', 'span_count', 'failure_types',
    ]);
    expect(listed).toMatchObject({
      id: trace.id,
      project_id: t.projectId,
      error: 'Request timed out',
      tags: ['env:prod', 'beta'],
      tag_map: { team: 'search' },
      started_at: '2026-08-08T08:08:08.008Z',
      ended_at: '2026-08-08T08:08:09.242Z',
      session_id: 'sess',
      external_id: 'ext-1',
      input: '{"q":"structured"}',
      output: 'plain',
      model: 'gpt-4o-mini',
      latency_ms: 1_234,
      cost: 0.25,
      total_token_count: 10,
      prompt_tokens_total: 7,
      completion_tokens_total: 3,
      metadata: { user: 'u1', nested: { a: 1 } },
      span_count: 1,
      failure_types: ['timeout'],
    });
  });
});

describe('GET /v1/traces/{id}', () => {
  it('returns the trace with every Span field, spans by start_time, error null when none, control_loop_depth 0', async () => {
    const t = await createTenant(ctx.app);
    const start = '2026-09-09T09:00:00.000Z';
    const rootId = randomUUID();
    const trace = aTrace({
      spans: [
        aSpan({ id: randomUUID(), parent_span_id: rootId, name: 'second', start_time: at(start, 200), end_time: at(start, 700), error: 'boom', cost: 0.5, metadata: { k: 'v' } }),
        aSpan({ id: rootId, name: 'root', type: 'chain', model: null, start_time: start, end_time: at(start, 900), prompt_tokens: 0, completion_tokens: 0 }),
      ],
    });
    await ingestTraces(ctx.app, t, [trace]);
    const { status, body } = await getJson(ctx.app, t, `/v1/traces/${trace.id}`);
    expect(status).toBe(200);
    expect(traceDetail.safeParse(body).success).toBe(true);
    expect(body.control_loop_depth).toBe(0);
    expect(body.otel_trace_id).toBeNull();
    expect(body.span_count).toBe(2);
    expect(body.spans.map((s: { name: string }) => s.name)).toEqual(['root', 'second']);
    const [root, second] = body.spans;
    expect(Object.keys(root).sort()).toEqual(
      [
        'id', 'created_at', 'tenant_id', 'trace_id', 'name', 'type', 'parent_span_id', 'input', 'output', 'model',
        'latency_ms', 'cost', 'error', 'prompt_tokens', 'completion_tokens', 'metadata', 'start_time', 'end_time',
        'otel_trace_id', 'otel_span_id', 'otel_parent_span_id', 'failure_type',
      ].sort(),
    );
    expect(root).toMatchObject({
      id: rootId,
      tenant_id: t.tenantId,
      trace_id: trace.id,
      type: 'chain',
      parent_span_id: null,
      model: '',
      latency_ms: 900,
      error: null,
      prompt_tokens: 0,
      completion_tokens: 0,
      metadata: {},
      start_time: start,
      end_time: at(start, 900),
      failure_type: null,
      otel_trace_id: '',
      otel_span_id: '',
      otel_parent_span_id: null,
      input: 'What is the capital of France?',
      output: 'Paris.',
    });
    expect(root.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(second).toMatchObject({ parent_span_id: rootId, error: 'boom', cost: 0.5, metadata: { k: 'v' }, latency_ms: 500, prompt_tokens: 12, completion_tokens: 3 });
  });

  it("answers 404 for another tenant's trace and never lists it", async () => {
    const owner = await createTenant(ctx.app);
    const stranger = await createTenant(ctx.app);
    const trace = timedTrace('2026-10-10T10:10:10.010Z', 10);
    await ingestTraces(ctx.app, owner, [trace]);
    expect((await getJson(ctx.app, owner, `/v1/traces/${trace.id}`)).status).toBe(200);
    const foreign = await getJson(ctx.app, stranger, `/v1/traces/${trace.id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('not_found');
    expect(await listIds(stranger, {})).toEqual([]);
    expect((await getJson(ctx.app, owner, `/v1/traces/${randomUUID()}`)).status).toBe(404);
  });
});

describe('trace read access', () => {
  it('admits query-scoped keys and viewers, on the query rate-limit bucket', async () => {
    const t = await createTenant(ctx.app);
    const keyAuth = await queryKeyAuth(ctx.app, t.auth);
    const scoped = { ...t, auth: keyAuth };
    const viewer = { ...t, auth: bearer(await sessionToken(t.tenantId, 'viewer')) };
    for (const who of [scoped, viewer]) {
      for (const url of ['/v1/traces', '/v1/traces/export', '/v1/sessions']) {
        const res = await ctx.app.inject({ method: 'GET', url, headers: who.auth });
        expect(res.statusCode, url).toBe(200);
        expect(res.headers['x-ratelimit-limit'], url).toBe(String(PLANS.pro.queryRequestsPerMinute));
      }
    }
    const anonymous = await ctx.app.inject({ method: 'GET', url: '/v1/traces' });
    expect(anonymous.statusCode).toBe(401);
  });
});

describe('TenantWhere', () => {
  it('starts every WHERE with the tenant and accepts values only as bound parameters', async () => {
    const { TenantWhere, bind } = await import('../../src/stores/clickhouse-where.js');
    const where = TenantWhere.forTenant('11111111-1111-4111-8111-111111111111').and`latency_ms >= ${bind('UInt64', 5)}`;
    const other = where.sibling('t.').and`id = ${bind('UUID', '22222222-2222-4222-8222-222222222222')}`;
    expect(where.sql).toBe('tenant_id = {tenant:UUID} AND (latency_ms >= {p0:UInt64})');
    expect(other.sql).toBe('t.tenant_id = {tenant:UUID} AND (id = {p1:UUID})');
    expect(other.params).toEqual({ tenant: '11111111-1111-4111-8111-111111111111', p0: 5, p1: '22222222-2222-4222-8222-222222222222' });
    const raw = "x' OR 1=1 --" as unknown as ReturnType<typeof bind>;
    expect(() => TenantWhere.forTenant('t').and`name = ${raw}`).toThrow(/bound parameters/);
  });
});

import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feedback as feedbackSchema, feedbackList } from '../../src/modules/feedback/schemas.js';
import { aTrace } from '../builders/traces.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { ingestTraces, withQuery, type QueryValues } from '../helpers/trace-api.js';
import { queryKeyAuth } from '../builders/resources.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

type Headers = Record<string, string>;

function expectError(res: LightMyRequestResponse, status: number, code: string): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().code).toBe(code);
}

const post = (headers: Headers, payload: unknown) => ctx.app.inject({ method: 'POST', url: '/v1/feedback', headers, payload: payload as object });
const get = (headers: Headers, query: QueryValues = {}) => ctx.app.inject({ method: 'GET', url: withQuery('/v1/feedback', query), headers });

async function create(headers: Headers, payload: Record<string, unknown>) {
  const res = await post(headers, payload);
  expect(res.statusCode, res.body).toBe(201);
  return feedbackSchema.parse(res.json());
}

async function list(headers: Headers, query: QueryValues = {}) {
  const res = await get(headers, { limit: 1000, ...query });
  expect(res.statusCode, res.body).toBe(200);
  return feedbackList.parse(res.json());
}

const ids = async (headers: Headers, query: QueryValues = {}) => (await list(headers, query)).feedback.map((f) => f.id);

/** A tenant with one ingested trace in its default project. */
async function tenantWithTrace(): Promise<{ t: TestTenant; traceId: string }> {
  const t = await createTenant(ctx.app);
  const trace = aTrace();
  await ingestTraces(ctx.app, t, [trace]);
  return { t, traceId: trace.id };
}

const setCreatedAt = (id: string, iso: string) => ctx.stores.sql`update feedback set created_at = ${iso} where id = ${id}`;

describe('POST /v1/feedback', () => {
  let t: TestTenant;
  let traceId: string;
  beforeAll(async () => {
    ({ t, traceId } = await tenantWithTrace());
  });

  it('stores the feedback on the trace, in the trace project, created by the calling key', async () => {
    const created = await create(t.auth, { trace_id: traceId, score: 0.9, comment: 'spot on', metadata: { user: 'u-1', n: [1, 2] } });
    const keys = (await ctx.app.inject({ method: 'GET', url: '/v1/apikeys', headers: t.auth })).json() as { id: string }[];
    expect(created).toMatchObject({
      tenant_id: t.tenantId,
      project_id: t.projectId,
      trace_id: traceId,
      score: 0.9,
      label: 'good',
      comment: 'spot on',
      metadata: { user: 'u-1', n: [1, 2] },
      created_by: keys[0]!.id,
    });
    expect(created.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(await ids(t.auth, { trace_id: traceId })).toContain(created.id);
    const audit = (await ctx.app.inject({ method: 'GET', url: '/v1/audit-log', headers: t.auth })).json();
    expect(audit.entries[0]).toMatchObject({ action: 'feedback.create', resource_type: 'feedback', resource_id: created.id });
  });

  it('defaults comment to null and metadata to {}', async () => {
    const created = await create(t.auth, { trace_id: traceId, score: 0.5 });
    expect(created.comment).toBeNull();
    expect(created.metadata).toEqual({});
  });

  it('derives the label from the score when none is sent: >= 0.7 good, <= 0.3 bad, else neutral', async () => {
    const cases: [number, string][] = [
      [1, 'good'],
      [0.7, 'good'],
      [0.69, 'neutral'],
      [0.5, 'neutral'],
      [0.31, 'neutral'],
      [0.3, 'bad'],
      [0, 'bad'],
    ];
    for (const [score, label] of cases) {
      expect((await create(t.auth, { trace_id: traceId, score })).label, `score ${score}`).toBe(label);
    }
  });

  it('keeps an explicit label whatever the score', async () => {
    expect((await create(t.auth, { trace_id: traceId, score: 0.95, label: 'bad' })).label).toBe('bad');
    expect((await create(t.auth, { trace_id: traceId, score: 0.1, label: 'neutral' })).label).toBe('neutral');
  });

  it('accepts a trace id in upper case', async () => {
    expect((await create(t.auth, { trace_id: traceId.toUpperCase(), score: 0.4 })).trace_id).toBe(traceId);
  });

  it('refuses a score outside 0..1 and other malformed bodies with 400', async () => {
    for (const score of [1.01, -0.01, '0.5', null]) {
      expectError(await post(t.auth, { trace_id: traceId, score }), 400, 'bad_request');
    }
    expectError(await post(t.auth, { trace_id: traceId, score: 0.5, label: 'great' }), 400, 'bad_request');
    expectError(await post(t.auth, { trace_id: traceId, score: 0.5, extra: 1 }), 400, 'bad_request');
    expectError(await post(t.auth, { trace_id: 'not-a-uuid', score: 0.5 }), 400, 'bad_request');
    expectError(await post(t.auth, { trace_id: traceId, score: 0.5, comment: 'x'.repeat(10_001) }), 400, 'bad_request');
    expectError(await post(t.auth, { trace_id: traceId, score: 0.5, comment: 'a\u0000b' }), 400, 'bad_request');
    expectError(await post(t.auth, { trace_id: traceId, score: 0.5, metadata: [1] }), 400, 'bad_request');
    expectError(await post(t.auth, { trace_id: traceId, score: 0.5, metadata: { deep: { k: 'a\u0000b' } } }), 400, 'bad_request');
    expectError(await post(t.auth, { trace_id: traceId, score: 0.5, metadata: { ['\ud800']: 1 } }), 400, 'bad_request');
  });

  it('bounds comment at 10,000 characters and metadata at 64 KB of JSON', async () => {
    await create(t.auth, { trace_id: traceId, score: 0.5, comment: 'x'.repeat(10_000) });
    const pad = (bytes: number) => ({ p: 'x'.repeat(bytes - JSON.stringify({ p: '' }).length) });
    expect(JSON.stringify(pad(64 * 1024)).length).toBe(64 * 1024);
    await create(t.auth, { trace_id: traceId, score: 0.5, metadata: pad(64 * 1024) });
    expectError(await post(t.auth, { trace_id: traceId, score: 0.5, metadata: pad(64 * 1024 + 1) }), 400, 'bad_request');
  });

  it('stores metadata nested as deep as a body may be', async () => {
    const deep = '{"a":'.repeat(127) + '1' + '}'.repeat(127);
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/v1/feedback',
      headers: { ...t.auth, 'content-type': 'application/json' },
      payload: `{"trace_id":"${traceId}","score":0.5,"metadata":${deep}}`,
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(JSON.stringify(res.json().metadata)).toBe(deep);
  });

  it('answers a missing trace_id or score with 422', async () => {
    expectError(await post(t.auth, { score: 0.5 }), 422, 'validation_error');
    expectError(await post(t.auth, { trace_id: traceId }), 422, 'validation_error');
  });

  it("answers 404 for an unknown trace and for another tenant's trace", async () => {
    expectError(await post(t.auth, { trace_id: randomUUID(), score: 0.5 }), 404, 'not_found');
    const other = await tenantWithTrace();
    expectError(await post(t.auth, { trace_id: other.traceId, score: 0.5 }), 404, 'not_found');
    expect(await ids(other.t.auth)).toEqual([]);
  });
});

describe('GET /v1/feedback filters', () => {
  let t: TestTenant;
  let otherProject: string;
  const traceA = aTrace();
  const traceB = aTrace();
  const made: Record<'a1' | 'a2' | 'a3' | 'b1', string> = { a1: '', a2: '', a3: '', b1: '' };

  beforeAll(async () => {
    t = await createTenant(ctx.app);
    const project = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: 'second' } });
    otherProject = project.json().id;
    await ingestTraces(ctx.app, t, [traceA, { ...traceB, project_id: otherProject }]);
    made.a1 = (await create(t.auth, { trace_id: traceA.id, score: 0.9 })).id;
    made.a2 = (await create(t.auth, { trace_id: traceA.id, score: 0.1 })).id;
    made.a3 = (await create(t.auth, { trace_id: traceA.id, score: 0.5 })).id;
    made.b1 = (await create(t.auth, { trace_id: traceB.id, score: 0.8 })).id;
    await setCreatedAt(made.a1, '2026-01-01T00:00:00.000Z');
    await setCreatedAt(made.a2, '2026-01-02T00:00:00.000Z');
    await setCreatedAt(made.a3, '2026-01-03T00:00:00.000Z');
    await setCreatedAt(made.b1, '2026-01-04T00:00:00.000Z');
  });

  it('lists everything newest first without filters', async () => {
    expect(await ids(t.auth)).toEqual([made.b1, made.a3, made.a2, made.a1]);
  });

  it('filters by project_id, taken from the trace', async () => {
    const page = await list(t.auth, { project_id: otherProject });
    expect(page.feedback.map((f) => f.id)).toEqual([made.b1]);
    expect(page.feedback[0]!.project_id).toBe(otherProject);
    expect(await ids(t.auth, { project_id: t.projectId })).toEqual([made.a3, made.a2, made.a1]);
  });

  it('filters by trace_id and by label', async () => {
    expect(await ids(t.auth, { trace_id: traceA.id })).toEqual([made.a3, made.a2, made.a1]);
    expect(await ids(t.auth, { label: 'good' })).toEqual([made.b1, made.a1]);
    expect(await ids(t.auth, { label: 'bad' })).toEqual([made.a2]);
    expect(await ids(t.auth, { label: 'neutral', trace_id: traceB.id })).toEqual([]);
    expectError(await get(t.auth, { label: 'great' }), 400, 'bad_request');
  });

  it('bounds created_at inclusively with from and to', async () => {
    expect(await ids(t.auth, { from: '2026-01-02T00:00:00.000Z' })).toEqual([made.b1, made.a3, made.a2]);
    expect(await ids(t.auth, { to: '2026-01-02T00:00:00Z' })).toEqual([made.a2, made.a1]);
    expect(await ids(t.auth, { from: '2026-01-02T00:00:00.000Z', to: '2026-01-03T00:00:00.000Z' })).toEqual([made.a3, made.a2]);
    expect(await ids(t.auth, { from: '2026-01-02T01:00:00+01:00', to: '2026-01-02T01:00:00+01:00' })).toEqual([made.a2]);
    // Sub-millisecond bounds: created_at has whole milliseconds, so 00.0000001 excludes 00.000.
    expect(await ids(t.auth, { from: '2026-01-02T00:00:00.0000001Z', to: '2026-01-03T00:00:00.0000001Z' })).toEqual([made.a3]);
    expect(await ids(t.auth, { from: '0000-01-01T00:00:00Z', to: '9999-12-31T23:59:59.999Z' })).toHaveLength(4);
  });

  it('refuses to < from with 400 on the to parameter', async () => {
    const res = await get(t.auth, { from: '2026-01-03T00:00:00.000Z', to: '2026-01-02T00:00:00.000Z' });
    expectError(res, 400, 'bad_request');
    expect(res.json().details).toEqual([expect.objectContaining({ path: 'query.to' })]);
    expectError(await get(t.auth, { from: 'yesterday' }), 400, 'bad_request');
  });
});

describe('GET /v1/feedback pagination', () => {
  let t: TestTenant;
  let traceId: string;
  let expected: string[];

  beforeAll(async () => {
    ({ t, traceId } = await tenantWithTrace());
    const created: string[] = [];
    for (let i = 0; i < 7; i += 1) created.push((await create(t.auth, { trace_id: traceId, score: i / 10 })).id);
    // Three share one created_at: the id breaks the tie, so no page boundary can skip or repeat one.
    const times = ['2026-02-01T00:00:00.000Z', '2026-02-02T00:00:00.000Z', '2026-02-02T00:00:00.000Z', '2026-02-02T00:00:00.000Z'];
    for (const [i, id] of created.entries()) await setCreatedAt(id, times[i] ?? `2026-02-0${i}T00:00:00.000Z`);
    expected = (await list(t.auth)).feedback.map((f) => f.id);
  });

  async function walk(query: QueryValues) {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 20; page += 1) {
      const body = await list(t.auth, { ...query, limit: 3, cursor });
      seen.push(...body.feedback.map((f) => f.id));
      if (!body.has_more) {
        expect(body.next_cursor).toBeNull();
        return { seen, pages: page + 1 };
      }
      cursor = body.next_cursor!;
    }
    throw new Error('pagination did not end');
  }

  it('walks every row once, newest first, with ties broken by id', async () => {
    expect(expected).toHaveLength(7);
    const { seen, pages } = await walk({});
    expect(pages).toBe(3);
    expect(seen).toEqual(expected);
    expect(new Set(seen).size).toBe(7);
  });

  it('pages within a filter, a cursor continuing only its own filters', async () => {
    const filter = { trace_id: traceId, from: '2026-02-01T00:00:00Z' };
    expect((await walk(filter)).seen).toEqual(expected);

    const first = await list(t.auth, { ...filter, limit: 3 });
    const cursor = first.next_cursor!;
    // The same bounds written another way are the same listing.
    expect((await list(t.auth, { trace_id: traceId, from: '2026-02-01T00:00:00.000+00:00', limit: 3, cursor })).feedback).toHaveLength(3);
    expectError(await get(t.auth, { ...filter, label: 'good', limit: 3, cursor }), 400, 'invalid_cursor');
    expectError(await get(t.auth, { limit: 3, cursor }), 400, 'invalid_cursor');
    expectError(await get(t.auth, { cursor: 'not-a-cursor' }), 400, 'invalid_cursor');
  });
});

describe('access', () => {
  let t: TestTenant;
  let traceId: string;
  let existing: string;
  beforeAll(async () => {
    ({ t, traceId } = await tenantWithTrace());
    existing = (await create(t.auth, { trace_id: traceId, score: 0.5 })).id;
  });

  it('a viewer session reads but cannot write', async () => {
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    expect(await ids(viewer)).toEqual([existing]);
    expectError(await post(viewer, { trace_id: traceId, score: 0.5 }), 403, 'role_forbidden');
  });

  it('a member session writes, recorded as created by its user', async () => {
    const member = bearer(await sessionToken(t.tenantId, 'member'));
    const created = await create(member, { trace_id: traceId, score: 0.5 });
    const [user] = await ctx.stores.sql<{ id: string }[]>`
      select id from users where tenant_id = ${t.tenantId} and idp_subject = ${`user-member-${t.tenantId}`}`;
    expect(created.created_by).toBe(user!.id);
  });

  it('a query-scoped key reads but cannot write', async () => {
    const reader = await queryKeyAuth(ctx.app, t.auth);
    expect(await ids(reader)).toContain(existing);
    expectError(await post(reader, { trace_id: traceId, score: 0.5 }), 403, 'scope_forbidden');
  });

  it('needs a credential', async () => {
    expectError(await get({}), 401, 'unauthorized');
    expectError(await post({}, { trace_id: traceId, score: 0.5 }), 401, 'unauthorized');
  });

  it("another tenant sees none of the tenant's feedback, even filtering by its trace", async () => {
    const other = await createTenant(ctx.app);
    expect(await ids(other.auth)).toEqual([]);
    expect(await ids(other.auth, { trace_id: traceId })).toEqual([]);
    expect(await ids(other.auth, { project_id: t.projectId })).toEqual([]);
  });
});

describe('OpenAPI', () => {
  it('documents both operations under the feedback tag, with their declared error codes', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: '/v1/openapi.json', headers: (await createTenant(ctx.app)).auth })).json();
    const create = doc.paths['/v1/feedback'].post;
    const read = doc.paths['/v1/feedback'].get;
    expect(create.tags).toEqual(['feedback']);
    expect(read.tags).toEqual(['feedback']);
    expect(create['x-access']).toMatchObject({ roles: ['owner', 'member'], scope: 'write' });
    expect(read['x-access']).toMatchObject({ roles: ['owner', 'member', 'viewer'], scope: 'read' });
    expect(JSON.stringify(create.responses['404'])).toContain('not_found');
    expect(JSON.stringify(create.responses['422'])).toContain('validation_error');
    expect(JSON.stringify(read.responses['400'])).toContain('invalid_cursor');
  });
});

import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.js';
import { cosine } from '../../bench/lib/vectors.js';
import { searchIndexRepository } from '../../src/modules/search/index-repo.js';
import { HnswIndexer } from '../../src/modules/search/indexer.js';
import { searchResults } from '../../src/modules/search/schemas.js';
import { searchStateRepository } from '../../src/modules/search/state-repo.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { ingestTraces, withQuery } from '../helpers/trace-api.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';
import { queryKeyAuth } from '../builders/resources.js';

let ctx: TestContext; // the server's embedder is the fake OpenAI
let bare: TestContext; // no embedder at all
let fake: FakeLlm;
beforeAll(async () => {
  fake = await startFakeLlm();
  ctx = await startApp({ OPENAI_API_KEY: 'sk-fake-search', OPENAI_BASE_URL: `${fake.url}/v1`, REDIS_PREFIX: TEST_REDIS_PREFIX });
  bare = await startApp({ OPENAI_API_KEY: '', OPENAI_BASE_URL: '' });
});
afterAll(async () => {
  await bare?.close();
  await ctx?.close();
  await fake?.close();
});

/** Seeded, so a failure replays; components in [-1, 1). */
function vectors(seed: number, count: number, dim: number): number[][] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => Array.from({ length: dim }, () => 2 * random() - 1));
}

/** The fake OpenAI's embedding of a text (test/helpers/fake-llm.ts). */
const fakeEmbedding = (text: string) => Array.from(createHash('sha256').update(text).digest().subarray(0, 8), (b) => b / 127.5 - 1);

interface StoredVector {
  spanId: string;
  traceId: string;
  vector: number[];
}

const span = <T extends object>(i: number, extra: T) => ({
  id: randomUUID(),
  name: `span ${i}`,
  type: i % 2 ? 'llm' : 'retrieval',
  start_time: '2026-01-01T00:00:00.000Z',
  end_time: '2026-01-01T00:00:01.000Z',
  ...extra,
});

/** Traces of five spans each, span i carrying vecs[i], through the real batch ingest. */
async function ingestVectors(t: TestTenant, projectId: string, vecs: readonly number[][]): Promise<StoredVector[]> {
  const stored: StoredVector[] = [];
  const traces = [];
  for (let start = 0; start < vecs.length; start += 5) {
    const traceId = randomUUID();
    const spans = vecs.slice(start, start + 5).map((embedding, j) => span(start + j, { embedding }));
    for (const s of spans) stored.push({ spanId: s.id, traceId, vector: s.embedding });
    traces.push({ id: traceId, project_id: projectId, name: 'vectors', input: 'q', output: 'a', spans });
  }
  await ingestTraces(ctx.app, t, traces);
  return stored;
}

const search = (t: { auth: Record<string, string> }, payload: object) =>
  ctx.app.inject({ method: 'POST', url: '/v1/search/spans', headers: t.auth, payload });

/** What the service must answer: every stored vector ranked by cosine computed here. */
const expected = (stored: readonly StoredVector[], query: readonly number[], limit = 10, threshold = 0) =>
  stored
    .map((s) => ({ span_id: s.spanId, trace_id: s.traceId, similarity: cosine(s.vector, query) }))
    .filter((r) => r.similarity >= threshold)
    .sort((a, b) => b.similarity - a.similarity)
    .slice(0, limit);

function expectRanking(body: unknown, want: ReturnType<typeof expected>) {
  const { results } = searchResults.parse(body);
  expect(results.map((r) => r.span_id)).toEqual(want.map((w) => w.span_id));
  results.forEach((r, i) => {
    expect(r.trace_id).toBe(want[i]!.trace_id);
    expect(r.similarity).toBeCloseTo(want[i]!.similarity, 5);
  });
  return results;
}

async function newProject(t: TestTenant): Promise<string> {
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: `search ${randomUUID()}` } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

describe('POST /v1/search/spans', () => {
  let t: TestTenant;
  let stored: StoredVector[];
  const query = vectors(99, 1, 16)[0]!;
  beforeAll(async () => {
    t = await createTenant(ctx.app, 'pro');
    stored = await ingestVectors(t, t.projectId, vectors(1, 40, 16));
  });

  it('finds natively ingested vectors nearest first, with their cosine similarity', async () => {
    const res = await search(t, { project_id: t.projectId, query_vector: query, limit: 40, threshold: -1 });
    expect(res.statusCode, res.body).toBe(200);
    const results = expectRanking(res.json(), expected(stored, query, 40, -1));
    expect(results[0]).toMatchObject({ span_name: expect.stringMatching(/^span \d+$/), span_type: expect.stringMatching(/^(llm|retrieval)$/) });
    expect(Date.parse(results[0]!.created_at)).toBeGreaterThan(Date.now() - 10 * 60_000);
  });

  it('returns 10 by default, at most limit, and only similarities at or above threshold (default 0)', async () => {
    const byDefault = await search(t, { project_id: t.projectId, query_vector: query });
    expectRanking(byDefault.json(), expected(stored, query));
    expect(byDefault.json().results).toHaveLength(10);
    expectRanking((await search(t, { project_id: t.projectId, query_vector: query, limit: 3 })).json(), expected(stored, query, 3));
    const above = expected(stored, query, 100, 0.3);
    expect(above.length).toBeGreaterThan(0);
    expect(above.length).toBeLessThan(20);
    expectRanking((await search(t, { project_id: t.projectId, query_vector: query, limit: 20, threshold: 0.3 })).json(), above);
  });

  it('refuses bad bounds and zero vectors with 400, a missing field with 422', async () => {
    const bad = [{ limit: 0 }, { limit: 101 }, { limit: 2.5 }, { threshold: 1.1 }, { threshold: -1.5 }, { query_vector: [] }, { query_vector: new Array(16).fill(0) }];
    for (const override of bad) {
      const res = await search(t, { project_id: t.projectId, query_vector: query, ...override });
      expect(res.statusCode, JSON.stringify(override)).toBe(400);
      expect(res.json().code).toBe('bad_request');
    }
    expect((await search(t, { query_vector: query })).statusCode).toBe(422);
  });

  it("stays within the tenant and the project: another tenant's project is 404, a project without vectors answers none", async () => {
    const other = await createTenant(ctx.app, 'pro');
    const theirs = await ingestVectors(other, other.projectId, [query, query]);
    const mine = await search(t, { project_id: t.projectId, query_vector: query, limit: 100, threshold: -1 });
    const ids = new Set(mine.json().results.map((r: { span_id: string }) => r.span_id));
    expect(ids.size).toBe(stored.length);
    for (const s of theirs) expect(ids.has(s.spanId)).toBe(false);
    const foreign = await search(t, { project_id: other.projectId, query_vector: query });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().code).toBe('not_found');
    const empty = await search(t, { project_id: await newProject(t), query_vector: query });
    expect(empty.json()).toEqual({ results: [] });
  });

  it('is readable with a query-scoped key and by a viewer', async () => {
    const keyAuth = await queryKeyAuth(ctx.app, t.auth);
    const reader = { auth: keyAuth };
    const viewer = { auth: bearer(await sessionToken(t.tenantId, 'viewer')) };
    for (const who of [reader, viewer]) {
      const res = await search(who, { project_id: t.projectId, query_vector: query });
      expect(res.statusCode, res.body).toBe(200);
      expectRanking(res.json(), expected(stored, query));
    }
  });

  it('is Pro and above: Starter gets 402 plan_upgrade_required with required_plan pro', async () => {
    const starter = await createTenant(ctx.app, 'starter');
    const post = await search(starter, { project_id: starter.projectId, query_vector: query });
    const get = await ctx.app.inject({ method: 'GET', url: withQuery('/v1/search/spans', { q: 'x', project_id: starter.projectId }), headers: starter.auth });
    for (const res of [post, get]) {
      expect(res.statusCode).toBe(402);
      expect(res.json()).toMatchObject({ code: 'plan_upgrade_required', required_plan: 'pro' });
    }
  });
});

describe('vector dimension of a project', () => {
  it('is fixed by the first vector: another dimension is 400 embedding.dimension_mismatch at ingest and at search', async () => {
    const t = await createTenant(ctx.app, 'pro');
    const projectId = await newProject(t);
    await ingestVectors(t, projectId, vectors(2, 3, 16));
    const one = await ctx.app.inject({
      method: 'POST',
      url: '/v1/ingest',
      headers: t.auth,
      payload: { project_id: projectId, name: 'x', input: 'q', output: 'a', spans: [span(0, { embedding: vectors(3, 1, 8)[0] })] },
    });
    expect(one.statusCode).toBe(400);
    expect(one.json()).toMatchObject({ code: 'embedding.dimension_mismatch', expected_dimensions: 16 });

    const good = { id: randomUUID(), project_id: projectId, name: 'ok', input: 'q', output: 'a', spans: [span(0, { embedding: vectors(4, 1, 16)[0] })] };
    const mixed = { id: randomUUID(), project_id: projectId, name: 'mixed', input: 'q', output: 'a', spans: [span(0, {}), span(1, { embedding: vectors(5, 1, 12)[0] })] };
    const batch = await ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces: [good, mixed] } });
    expect(batch.statusCode).toBe(207);
    expect(batch.json().results).toMatchObject([{ status: 201 }, { status: 400, code: 'embedding.dimension_mismatch', id: mixed.id }]);
    // The refused trace was never reserved: sent again with a vector of the right size, it is created.
    const retried = { ...mixed, spans: [span(0, {}), span(1, { embedding: vectors(5, 1, 16)[0] })] };
    await ingestTraces(ctx.app, t, [retried]);

    const wrong = await search(t, { project_id: projectId, query_vector: vectors(6, 1, 8)[0] });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json()).toMatchObject({ code: 'embedding.dimension_mismatch', expected_dimensions: 16 });
    const right = await search(t, { project_id: projectId, query_vector: vectors(6, 1, 16)[0], threshold: -1 });
    expect(right.json().results).toHaveLength(5);
  });

  it('refuses a first request whose spans disagree among themselves', async () => {
    const t = await createTenant(ctx.app, 'pro');
    const projectId = await newProject(t);
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/v1/ingest',
      headers: t.auth,
      payload: { project_id: projectId, name: 'x', input: 'q', output: 'a', spans: [span(0, { embedding: [1, 0, 0] }), span(1, { embedding: [1, 0] })] },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'embedding.dimension_mismatch', expected_dimensions: 3 });
  });
});

describe('GET /v1/search/spans?q=', () => {
  it("embeds q with the tenant's embedder and searches by it", async () => {
    const t = await createTenant(ctx.app, 'pro');
    const projectId = await newProject(t);
    const texts = ['refund policy', 'reset my password', 'shipping to Norway', 'cancel the subscription'];
    const stored = await ingestVectors(t, projectId, texts.map(fakeEmbedding));
    fake.reset();
    const res = await ctx.app.inject({
      method: 'GET',
      url: withQuery('/v1/search/spans', { q: 'reset my password', project_id: projectId, limit: 2, threshold: -1 }),
      headers: t.auth,
    });
    expect(res.statusCode, res.body).toBe(200);
    expectRanking(res.json(), expected(stored, fakeEmbedding('reset my password'), 2, -1));
    expect(res.json().results[0]).toMatchObject({ span_id: stored[1]!.spanId });
    expect(res.json().results[0].similarity).toBeCloseTo(1, 5);
    expect(fake.requests.map((r) => [r.path, (r.body as { input: unknown }).input])).toEqual([['/v1/embeddings', ['reset my password']]]);
  });

  it('is 400 search.no_embedder when the tenant has no embedding provider', async () => {
    const t = await createTenant(bare.app, 'pro');
    const res = await bare.app.inject({ method: 'GET', url: withQuery('/v1/search/spans', { q: 'anything', project_id: t.projectId }), headers: t.auth });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('search.no_embedder');
    expect(res.json().error).toMatch(/llm-connections/);
    const optIn = await bare.app.inject({ method: 'PUT', url: `/v1/projects/${t.projectId}/search-settings`, headers: t.auth, payload: { embed_spans: true } });
    expect(optIn.statusCode).toBe(400);
    expect(optIn.json().code).toBe('search.no_embedder');
  });
});

describe('server-side embedding', () => {
  it('embeds the spans of an opted-in project that came without vectors, in the background', async () => {
    const t = await createTenant(ctx.app, 'pro');
    const optIn = await ctx.app.inject({ method: 'PUT', url: `/v1/projects/${t.projectId}/search-settings`, headers: t.auth, payload: { embed_spans: true } });
    expect(optIn.statusCode, optIn.body).toBe(200);
    expect(optIn.json()).toMatchObject({ project_id: t.projectId, embed_spans: true, dimensions: null, last_error: null });
    expect(Date.parse(optIn.json().embedded_until)).toBeGreaterThan(Date.now() - 60_000);
    const own = fakeEmbedding('a vector of its own');
    const spans = [
      span(0, { input: 'where is my parcel', output: 'in Oslo' }),
      span(1, { input: 'change my plan', output: 'done' }),
      span(2, {}), // no text: nothing to embed
      span(3, { input: 'keeps', output: 'its vector', embedding: own }),
    ];
    await ingestTraces(ctx.app, t, [{ name: 'chat', input: 'q', output: 'a', spans }]);

    const workers = await startTestWorkers(ctx, ['search-embed']);
    try {
      const url = withQuery('/v1/search/spans', { q: 'change my plan\ndone', project_id: t.projectId, threshold: -1 });
      const found = await pollUntil(
        async () => (await ctx.app.inject({ method: 'GET', url, headers: t.auth })).json(),
        (body) => body.results?.length === 3,
      );
      const query = fakeEmbedding('change my plan\ndone');
      const want = [
        { id: spans[0]!.id, vector: fakeEmbedding('where is my parcel\nin Oslo') },
        { id: spans[1]!.id, vector: query },
        { id: spans[3]!.id, vector: own },
      ];
      expectRanking(found, expected(want.map((w) => ({ spanId: w.id, traceId: found.results[0].trace_id, vector: w.vector })), query, 10, -1));
    } finally {
      await workers.close();
    }
    const settings = await ctx.app.inject({ method: 'GET', url: `/v1/projects/${t.projectId}/search-settings`, headers: t.auth });
    expect(settings.json()).toMatchObject({ embed_spans: true, dimensions: 8, last_error: null, embedded_until: expect.any(String) });
  });

  it('keeps a span whose text the provider refuses from being sent again', async () => {
    const t = await createTenant(ctx.app, 'pro');
    await ctx.app.inject({ method: 'PUT', url: `/v1/projects/${t.projectId}/search-settings`, headers: t.auth, payload: { embed_spans: true } });
    await ingestTraces(ctx.app, t, [{ name: 'chat', input: 'q', output: 'a', spans: [span(0, { input: 'one' }), span(1, { input: 'two' })] }]);
    fake.reset();
    // The batch is refused, then (span by span) the first span's text; the second goes through.
    fake.enqueue({ status: 400, message: 'invalid input' }, { status: 400, message: 'invalid input' });
    expect(await ctx.app.services.spanEmbedder.drain()).toMatchObject({ embedded: 1 });
    const settings = await ctx.app.inject({ method: 'GET', url: `/v1/projects/${t.projectId}/search-settings`, headers: t.auth });
    expect(settings.json().last_error).toMatch(/refused the text of 1 span/);
    fake.reset();
    expect(await ctx.app.services.spanEmbedder.drain()).toMatchObject({ embedded: 0 });
    expect(fake.requests).toEqual([]);
  });

  it("answers 404 for another tenant's project", async () => {
    const [t, other] = [await createTenant(ctx.app, 'pro'), await createTenant(ctx.app, 'pro')];
    const res = await ctx.app.inject({ method: 'PUT', url: `/v1/projects/${other.projectId}/search-settings`, headers: t.auth, payload: { embed_spans: true } });
    expect(res.statusCode).toBe(404);
  });
});

describe('HNSW index', () => {
  it("serves a big project from its index, and the vectors stored since from the exact tail", async () => {
    const t = await createTenant(ctx.app, 'pro');
    const projectId = await newProject(t);
    const stored = await ingestVectors(t, projectId, vectors(7, 60, 16));
    const quiet = { warn: () => {} };
    const indexer = new HnswIndexer(searchIndexRepository(ctx.stores.ch), searchStateRepository(ctx.stores.sql), quiet, { minVectors: 50, lagSeconds: 0 });
    const first = await indexer.pass();
    expect(first.vectors).toBeGreaterThanOrEqual(60);
    expect(await searchStateRepository(ctx.stores.sql).indexState(t.tenantId, projectId)).toMatchObject({ dim: 16 });

    const query = vectors(8, 1, 16)[0]!;
    // Similarities from the index are its bf16 copies' (within about 1e-3), so near-ties may swap.
    const sameNearest = (body: unknown, want: ReturnType<typeof expected>) => {
      const { results } = searchResults.parse(body);
      const bySpan = new Map(want.map((w) => [w.span_id, w.similarity]));
      expect(new Set(results.map((r) => r.span_id))).toEqual(new Set(bySpan.keys()));
      for (const r of results) expect(r.similarity).toBeCloseTo(bySpan.get(r.span_id)!, 2);
    };
    sameNearest((await search(t, { project_id: projectId, query_vector: query, limit: 5, threshold: -1 })).json(), expected(stored, query, 5, -1));
    const newer = await ingestVectors(t, projectId, [query]);
    const res = await search(t, { project_id: projectId, query_vector: query, limit: 5, threshold: -1 });
    sameNearest(res.json(), expected([...stored, ...newer], query, 5, -1));
    expect(res.json().results[0]).toMatchObject({ span_id: newer[0]!.spanId, similarity: 1 });
  });
});

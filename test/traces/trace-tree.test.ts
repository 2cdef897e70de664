import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANS } from '../../src/platform/plans.js';
import { span as spanSchema, spanSummary, traceTree } from '../../src/modules/traces/schemas.js';
import { queryKeyAuth } from '../builders/resources.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { getJson, ingestTraces } from '../helpers/trace-api.js';

/**
 * GET /v1/traces/{id}/tree (the detail without span inputs, outputs and metadata) and
 * GET /v1/traces/{id}/spans/{span_id} (one span whole), held to what GET /v1/traces/{id} answers.
 */
let ctx: TestContext;
let owner: TestTenant;
let stranger: TestTenant;
const start = '2026-09-09T09:00:00.000Z';
const at = (plusMs: number) => new Date(Date.parse(start) + plusMs).toISOString();
const rootId = randomUUID();
const unicode = 'emoji 🙂🙂 中文 quote " newline \n';
const trace = aTrace({
  metadata: { user: 'u1' },
  spans: [
    aSpan({ id: rootId, name: 'root', type: 'chain', model: null, start_time: start, end_time: at(900), output: '' }),
    aSpan({ parent_span_id: rootId, name: 'llm', input: unicode, output: 'x'.repeat(5000), start_time: at(10), end_time: at(20), metadata: { k: [1, 'v'] } }),
    aSpan({ parent_span_id: rootId, error: 'upstream request timed out after 30000 ms', failure_type: 'timeout', cost: 0.000123, input: '', start_time: at(30), end_time: at(31) }),
  ],
});
const otherTrace = aTrace({ spans: [aSpan({ start_time: start, end_time: at(5) })] });
const codePoints = (text: string) => [...text].length;
const hexOf = (uuid: string) => uuid.replaceAll('-', '').toUpperCase();

type Detail = { spans: Record<string, unknown>[] } & Record<string, unknown>;
let detail: Detail;

beforeAll(async () => {
  ctx = await startApp();
  owner = await createTenant(ctx.app);
  stranger = await createTenant(ctx.app);
  await ingestTraces(ctx.app, owner, [trace, otherTrace]);
  const res = await getJson(ctx.app, owner, `/v1/traces/${trace.id}`);
  expect(res.status).toBe(200);
  detail = res.body;
});
afterAll(async () => ctx?.close());

describe('GET /v1/traces/{id}/tree', () => {
  it('is the detail with each span holding input_chars and output_chars instead of input, output and metadata', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: `/v1/traces/${trace.id}/tree`, headers: owner.auth });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const tree = res.json();
    const expected = {
      ...detail,
      spans: detail.spans.map(({ input, output, metadata: _metadata, ...rest }) => ({
        ...rest,
        input_chars: codePoints(input as string),
        output_chars: codePoints(output as string),
      })),
    };
    expect(tree).toEqual(expected);
    expect(tree.spans.map((s: { input_chars: number }) => s.input_chars)).toEqual([30, codePoints(unicode), 0]);
    expect(tree.spans.map((s: { output_chars: number }) => s.output_chars)).toEqual([0, 5000, 6]);
    // The schema's fields in the schema's order, and the bytes its serializer would write.
    for (const s of tree.spans) expect(Object.keys(s)).toEqual(Object.keys(spanSummary.shape));
    expect(Object.keys(tree)).toEqual(Object.keys(traceTree.shape));
    expect(res.body).toBe(JSON.stringify(traceTree.encode(tree)));
  });

  it('takes the OTel form of the trace id, as the detail does', async () => {
    const byHex = await getJson(ctx.app, owner, `/v1/traces/${hexOf(trace.id)}/tree`);
    const byUuid = await getJson(ctx.app, owner, `/v1/traces/${trace.id}/tree`);
    expect(byHex.status).toBe(200);
    expect(byHex.body).toEqual(byUuid.body);
  });
});

describe('GET /v1/traces/{id}/spans/{span_id}', () => {
  it("answers each span exactly as the detail shows it, by either trace id form", async () => {
    for (const shown of detail.spans) {
      const res = await getJson(ctx.app, owner, `/v1/traces/${trace.id}/spans/${shown.id}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual(shown);
      expect(Object.keys(res.body)).toEqual(Object.keys(spanSchema.shape));
    }
    const [, llm] = detail.spans;
    const upper = await getJson(ctx.app, owner, `/v1/traces/${hexOf(trace.id)}/spans/${String(llm!.id).toUpperCase()}`);
    expect(upper.body).toEqual(llm);
    expect(upper.body).toMatchObject({ input: unicode, metadata: { k: [1, 'v'] } });
  });

  it("is a 404 for a span of another trace, an unknown span and another tenant's span", async () => {
    const [otherSpan] = otherTrace.spans;
    expect((await getJson(ctx.app, owner, `/v1/traces/${otherTrace.id}/spans/${otherSpan!.id}`)).status).toBe(200);
    const mixed = await getJson(ctx.app, owner, `/v1/traces/${trace.id}/spans/${otherSpan!.id}`);
    expect(mixed.status).toBe(404);
    expect(mixed.body.code).toBe('not_found');
    expect((await getJson(ctx.app, owner, `/v1/traces/${trace.id}/spans/${randomUUID()}`)).status).toBe(404);
    expect((await getJson(ctx.app, owner, `/v1/traces/${randomUUID()}/spans/${rootId}`)).status).toBe(404);
  });
});

describe('both routes', () => {
  it("answer 404 for another tenant's trace", async () => {
    for (const url of [`/v1/traces/${trace.id}/tree`, `/v1/traces/${trace.id}/spans/${rootId}`, `/v1/traces/${hexOf(trace.id)}/tree`]) {
      const res = await getJson(ctx.app, stranger, url);
      expect(res.status, url).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
  });

  it.each([
    ['a trace id of neither form', `/v1/traces/abc123/tree`, 'params.id: must be a trace UUID (8-4-4-4-12 hex digits) or an OTel trace id (32 hex digits)'],
    ['a trace id of neither form (span)', `/v1/traces/${'zz'.repeat(16)}/spans/${rootId}`, 'params.id: must be a trace UUID (8-4-4-4-12 hex digits) or an OTel trace id (32 hex digits)'],
    ['a span id that is not a UUID', `/v1/traces/${trace.id}/spans/not-a-uuid`, /^params\.span_id: /],
    ['a span id in OTel hex form', `/v1/traces/${trace.id}/spans/${'ab'.repeat(8)}`, /^params\.span_id: /],
  ])('are a 400 for %s', async (_, url, error) => {
    const res = await getJson(ctx.app, owner, url);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('bad_request');
    expect(res.body.error).toMatch(error);
  });

  it('admit query-scoped keys and viewers, on the query rate-limit bucket, and no one anonymous', async () => {
    const scoped = await queryKeyAuth(ctx.app, owner.auth);
    const viewer = bearer(await sessionToken(owner.tenantId, 'viewer'));
    for (const headers of [scoped, viewer]) {
      for (const url of [`/v1/traces/${trace.id}/tree`, `/v1/traces/${trace.id}/spans/${rootId}`]) {
        const res = await ctx.app.inject({ method: 'GET', url, headers });
        expect(res.statusCode, url).toBe(200);
        expect(res.headers['x-ratelimit-limit'], url).toBe(String(PLANS.pro.queryRequestsPerMinute));
      }
    }
    expect((await ctx.app.inject({ method: 'GET', url: `/v1/traces/${trace.id}/tree` })).statusCode).toBe(401);
  });

  it('are in the OpenAPI document with their answers', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: '/v1/openapi.json', headers: owner.auth })).json();
    const tree = doc.paths['/v1/traces/{id}/tree'].get;
    const one = doc.paths['/v1/traces/{id}/spans/{span_id}'].get;
    expect(tree.summary).toMatch(/span tree/);
    expect(one.summary).toMatch(/One span/);
    const treeText = JSON.stringify(tree.responses['200']);
    for (const field of ['input_chars', 'output_chars', 'control_loop_depth', 'parent_span_id']) expect(treeText).toContain(field);
    expect(one.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['id', 'span_id']);
    expect(JSON.stringify(one.responses['200'])).toContain('otel_parent_span_id');
  });
});

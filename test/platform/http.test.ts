import fc from 'fast-check';
import Fastify, { type LightMyRequestResponse } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError } from '../../src/platform/errors.js';
import { registerErrorHandling } from '../../src/platform/http-errors.js';
import { MAX_JSON_DEPTH, shapeProblem } from '../../src/platform/json-body.js';
import { errorBody } from '../../src/platform/schemas.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { startAppWithRoutes, toOpenApiPath, type RegisteredRoute } from '../helpers/routes.js';

let ctx: TestContext;
let routes: RegisteredRoute[];
let t: TestTenant;
beforeAll(async () => {
  ({ ctx, routes } = await startAppWithRoutes());
  t = await createTenant(ctx.app);
});
afterAll(async () => ctx?.close());

const STACK_FRAME = /\n\s+at |\bat .+\.(?:js|ts):\d+/;

function expectErrorBody(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = errorBody.parse(res.json());
  expect(body.code).toBe(code);
  expect(body.request_id).toBe(res.headers['x-request-id']);
  expect(res.body).not.toMatch(STACK_FRAME);
  expect(res.body).not.toContain('"stack"');
  return body as typeof body & { details?: { path: string; message: string }[] };
}

describe('request ids', () => {
  it('are on every response: success, 401, unknown route, public route', async () => {
    const responses = await Promise.all([
      ctx.app.inject({ method: 'GET', url: '/v1/projects', headers: t.auth }),
      ctx.app.inject({ method: 'GET', url: '/v1/projects' }),
      ctx.app.inject({ method: 'GET', url: '/v1/no-such-route', headers: t.auth }),
      ctx.app.inject({ method: 'GET', url: '/healthz' }),
    ]);
    expect(responses.map((r) => r.statusCode)).toEqual([200, 401, 404, 200]);
    const ids = responses.map((r) => r.headers['x-request-id']);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expectErrorBody(responses[2]!, 404, 'not_found');
  });

  it('echo a safe incoming X-Request-Id, also in error bodies', async () => {
    const id = 'client-req.42:abc_DEF';
    const ok = await ctx.app.inject({ method: 'GET', url: '/v1/projects', headers: { ...t.auth, 'x-request-id': id } });
    expect(ok.headers['x-request-id']).toBe(id);
    const denied = await ctx.app.inject({ method: 'GET', url: '/v1/projects', headers: { 'x-request-id': id } });
    expect(expectErrorBody(denied, 401, 'unauthorized').request_id).toBe(id);
    const missing = await ctx.app.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': id } });
    expect(expectErrorBody(missing, 404, 'not_found').request_id).toBe(id);
  });

  it('replace an unsafe incoming X-Request-Id', async () => {
    for (const unsafe of ['has space', 'x'.repeat(129), '<script>', 'new\u2028line']) {
      const res = await ctx.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': unsafe } });
      expect(res.headers['x-request-id']).not.toBe(unsafe);
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});

describe('request bodies', () => {
  const post = (payload: string | object, headers: Record<string, string> = {}) =>
    ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: { ...t.auth, 'content-type': 'application/json', ...headers }, payload });

  it('malformed JSON is 400 bad_request', async () => {
    for (const raw of ['{"name": ', '{name: "x"}', '"unterminated', '{"name":"x"}}']) {
      expectErrorBody(await post(raw), 400, 'bad_request');
    }
  });

  it('a JSON body with a prototype-pollution key is 400, not processed, and says why', async () => {
    for (const payload of ['{"name":"x","__proto__":{"admin":true}}', '{"name":"x","metadata":[{"constructor":{"prototype":{"admin":true}}}]}']) {
      const body = expectErrorBody(await post(payload), 400, 'bad_request');
      expect(body.error).toContain('__proto__');
    }
  });

  it('an empty body sent as JSON is no body: body-less operations still work', async () => {
    const project = (await post({ name: 'spare' })).json();
    const archived = await ctx.app.inject({
      method: 'POST',
      url: `/v1/projects/${project.id}/archive`,
      headers: { ...t.auth, 'content-type': 'application/json' },
      payload: '',
    });
    expect(archived.statusCode, archived.body).toBe(200);
    // A route that needs a body still says which field is missing.
    const missing = expectErrorBody(await post(''), 400, 'bad_request');
    expect(missing.error).toBeTruthy();
  });

  it('a wrong type is 400 bad_request naming the field', async () => {
    const body = expectErrorBody(await post({ name: 5 }), 400, 'bad_request');
    expect(body.details?.map((d) => d.path)).toContain('body.name');
  });

  it('a body that is not an object is 400 bad_request', async () => {
    for (const raw of ['[]', '5', '"name"', 'null']) expectErrorBody(await post(raw), 400, 'bad_request');
  });

  it('a missing required field is 422 validation_error naming the field', async () => {
    const body = expectErrorBody(await post({}), 422, 'validation_error');
    expect(body.details).toEqual([expect.objectContaining({ path: 'body.name' })]);
  });

  it('an unknown field on a strict body is 400', async () => {
    expectErrorBody(await post({ name: 'x', owner: 'me' }), 400, 'bad_request');
    expectErrorBody(
      await ctx.app.inject({ method: 'POST', url: '/v1/apikeys', headers: t.auth, payload: { name: 'k', admin: true } }),
      400,
      'bad_request',
    );
    const list = (await ctx.app.inject({ method: 'GET', url: '/v1/projects', headers: t.auth })).json();
    expect(list.projects.map((p: { name: string }) => p.name)).not.toContain('x');
  });

  it('a bad path parameter or query value is 400 naming it', async () => {
    const params = expectErrorBody(
      await ctx.app.inject({ method: 'GET', url: '/v1/projects/not-a-uuid', headers: t.auth }),
      400,
      'bad_request',
    );
    expect(params.details?.map((d) => d.path)).toContain('params.id');
    const query = expectErrorBody(
      await ctx.app.inject({ method: 'GET', url: '/v1/projects?limit=100000', headers: t.auth }),
      400,
      'bad_request',
    );
    expect(query.details?.map((d) => d.path)).toContain('query.limit');
  });

  it('text Postgres cannot store exactly (NUL, unpaired surrogates) is 400, never 500', async () => {
    for (const name of ['a\u0000b', '\u0000', 'x\ud800', '\udc00y']) {
      const body = expectErrorBody(await post({ name }), 400, 'bad_request');
      expect(body.details?.map((d) => d.path)).toEqual(['body.name']);
      expectErrorBody(
        await ctx.app.inject({ method: 'PATCH', url: `/v1/projects/${t.projectId}`, headers: t.auth, payload: { name } }),
        400,
        'bad_request',
      );
      expectErrorBody(await ctx.app.inject({ method: 'POST', url: '/v1/apikeys', headers: t.auth, payload: { name } }), 400, 'bad_request');
    }
    const emoji = await post({ name: 'bot 😀 ñ \u202e' });
    expect(emoji.statusCode).toBe(201);
    expect(emoji.json().name).toBe('bot 😀 ñ \u202e');
  });

  it(`JSON nested deeper than ${MAX_JSON_DEPTH} levels is 400, not a stack overflow`, async () => {
    const nested = (depth: number) => `{"name":${'['.repeat(depth - 1)}1${']'.repeat(depth - 1)}}`;
    const deep = expectErrorBody(await post(nested(MAX_JSON_DEPTH + 1)), 400, 'bad_request');
    expect(deep.error).toMatch(/nests deeper/);
    expectErrorBody(await post(nested(100_000)), 400, 'bad_request');
    // At the cap the body parses and reaches the schema, which refuses the type.
    const atCap = expectErrorBody(await post(nested(MAX_JSON_DEPTH)), 400, 'bad_request');
    expect(atCap.details?.map((d) => d.path)).toContain('body.name');
    // Brackets inside strings are text, not nesting.
    expect((await post({ name: '['.repeat(150) })).statusCode).toBe(201);
  });

  it('an unsupported content type is 415', async () => {
    const res = await post('name=x', { 'content-type': 'application/x-www-form-urlencoded' });
    expectErrorBody(res, 415, 'unsupported_media_type');
  });
});

describe('body size limit', () => {
  let small: TestContext;
  let tenant: TestTenant;
  beforeAll(async () => {
    small = await startApp({ BODY_LIMIT_BYTES: '1024' });
    tenant = await createTenant(small.app);
  });
  afterAll(async () => small?.close());

  it('is 413 payload_too_large over the limit, and fine under it', async () => {
    const over = await small.app.inject({
      method: 'POST',
      url: '/v1/projects',
      headers: tenant.auth,
      payload: { name: 'x'.repeat(2000) },
    });
    expectErrorBody(over, 413, 'payload_too_large');
    const under = await small.app.inject({ method: 'POST', url: '/v1/projects', headers: tenant.auth, payload: { name: 'small' } });
    expect(under.statusCode).toBe(201);
  });
});

describe('operations endpoints', () => {
  it('GET /healthz is 200', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz is 200 with every check ok', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok', clickhouse: 'ok' } });
  });

  it('GET /metrics exposes request durations by route and store call durations', async () => {
    await ctx.app.inject({ method: 'GET', url: `/v1/projects/${t.projectId}`, headers: t.auth });
    const res = await ctx.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const text = res.body;
    expect(text).toMatch(/^http_request_duration_seconds_bucket\{.*route="\/v1\/projects\/:id".*\} \d+/m);
    expect(text).toMatch(/^http_request_duration_seconds_count\{method="GET",route="\/v1\/projects\/:id",status_code="200"\} [1-9]/m);
    // Concrete ids never become label values (unbounded cardinality).
    expect(text).not.toContain(t.projectId);
    expect(text).toMatch(/^store_call_duration_seconds_count\{store="postgres",op="[^"]+"\} [1-9]/m);
    expect(text).toMatch(/^store_call_duration_seconds_count\{store="redis",op="ratelimit.hit"\} [1-9]/m);
    // Queue depths are read from Redis at scrape time, one series per queue and state.
    expect(text).toMatch(/^queue_jobs\{queue="evals",state="waiting"\} \d+/m);
    expect(text).toMatch(/^queue_jobs\{queue="audit-anchor",state="failed"\} \d+/m);
  });

  it('GET /v1/openapi.json is OpenAPI 3.1 and documents every registered /v1 route', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/openapi.json', headers: t.auth });
    expect(res.statusCode).toBe(200);
    const doc = res.json() as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toMatch(/^3\.1\./);
    const documented = routes.filter((r) => r.url.startsWith('/v1/') && !r.hidden && r.method !== 'HEAD');
    expect(documented.length).toBeGreaterThan(0);
    const missing = documented.filter((r) => !doc.paths[toOpenApiPath(r.url)]?.[r.method.toLowerCase()]);
    expect(missing.map((r) => `${r.method} ${r.url}`)).toEqual([]);
    expect(doc.paths['/v1/me']?.get).toBeDefined();
  });
});

describe('shapeProblem', () => {
  const depthOf = (v: unknown): number =>
    Array.isArray(v) ? 1 + Math.max(0, ...v.map(depthOf)) : v !== null && typeof v === 'object' ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0;

  // Any JSON without the prototype-poisoning keys (fc.jsonValue makes `__proto__` keys too): the next test covers those.
  const harmlessJson = fc.jsonValue({ maxDepth: 12 }).filter((v) => !/"(__proto__|constructor)":/.test(JSON.stringify(v)));

  it('agrees with the depth of the value, for any JSON', () => {
    fc.assert(
      fc.property(harmlessJson, fc.integer({ min: 0, max: 14 }), (value, max) => {
        expect(shapeProblem(value, max)).toBe(depthOf(value) > max ? 'too_deep' : null);
      }),
      { numRuns: 500 },
    );
  });

  it('walks a million levels without recursion', () => {
    const deep = JSON.parse('['.repeat(1_000_000) + ']'.repeat(1_000_000));
    expect(shapeProblem(deep, MAX_JSON_DEPTH)).toBe('too_deep');
  });

  it('finds a prototype-poisoning key at any depth, and only those', () => {
    const poisoned = ['{"__proto__":{"admin":true}}', '[1,{"a":[{"__proto__":null}]}]', '{"x":{"constructor":{"prototype":{"admin":true}}}}'];
    for (const text of poisoned) expect(shapeProblem(JSON.parse(text), MAX_JSON_DEPTH)).toBe('prototype');
    const harmless = ['{"constructor":"a string"}', '{"constructor":{"name":"x"}}', '{"proto":{}, "prototype":{}}', '["__proto__"]', '{"a":"__proto__"}'];
    for (const text of harmless) expect(shapeProblem(JSON.parse(text), MAX_JSON_DEPTH)).toBeNull();
  });
});

describe('error bodies and route response schemas', () => {
  it("an error is sent as our error body even where the route declares its own schema for that status", async () => {
    const app = Fastify({ logger: false }).withTypeProvider<ZodTypeProvider>();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    registerErrorHandling(app);
    app.post('/x', {
      schema: {
        body: z.object({ n: z.number() }),
        response: { 400: z.object({ error: z.string(), results: z.array(z.string()) }), 409: z.object({ results: z.array(z.string()) }) },
      },
      handler: async () => {
        throw new AppError(409, 'conflict', 'taken');
      },
    });
    const invalid = await app.inject({ method: 'POST', url: '/x', payload: { n: 'one' } });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json()).toMatchObject({ code: 'bad_request', request_id: expect.any(String) });
    const thrown = await app.inject({ method: 'POST', url: '/x', payload: { n: 1 } });
    expect(thrown.statusCode).toBe(409);
    expect(thrown.json()).toMatchObject({ code: 'conflict', error: 'taken' });
    await app.close();
  });
});

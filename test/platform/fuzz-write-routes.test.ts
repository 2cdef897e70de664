import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTenant, sessionToken, type TestContext, type TestTenant } from '../helpers/app.js';
import { MUTATING_METHODS, pathParams, startAppWithRoutes, type RegisteredRoute } from '../helpers/routes.js';
import { aProject, create } from '../builders/resources.js';

/**
 * Property: whatever a client sends to a state-changing route, the answer is never a 5xx, and
 * every refusal is a JSON error body with `error` and `request_id` and no stack trace.
 */

const NUM_RUNS = 40;
const STACK_FRAME = /\n\s+at |\bat .+\.(?:js|ts):\d+/;

let ctx: TestContext;
let routes: RegisteredRoute[];
let t: TestTenant;
let owner: Record<string, string>;
let realIds: string[];
beforeAll(async () => {
  ({ ctx, routes } = await startAppWithRoutes());
  // Enterprise: a fuzz run is hundreds of requests, and the limiter is not what is under test here.
  t = await createTenant(ctx.app, 'enterprise');
  // A session, so that a fuzzed DELETE /v1/apikeys/{real id} cannot revoke the credential in use.
  owner = bearer(await sessionToken(t.tenantId, 'owner'));
  const spareKey = (await ctx.app.inject({ method: 'POST', url: '/v1/apikeys', headers: t.auth, payload: { name: 'spare' } })).json();
  const spareProject = await create(ctx.app, '/v1/projects', t.auth, aProject({ name: 'spare' }));
  realIds = [t.projectId, spareKey.id, spareProject.id];
});
afterAll(async () => ctx?.close());

/** JSON text spliced in verbatim: number tokens JSON.stringify cannot produce (1e999, -0), pre-built deep nesting. */
class RawJson {
  constructor(readonly text: string) {}
}

function toJsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Strings that stores and parsers treat specially: NUL, lone surrogates, bidi controls, SQL, numbers as text. */
const specialString = fc.oneof(
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udfff', '\ud83d', '\u202e\u0041', '\ufeff', '\u2028'),
  fc.constantFrom('', ' ', '😀'.repeat(50), "'; drop table projects; --", '%00', '../..', 'NaN', '-NaN', 'Infinity', '-0', '1e308', '__proto__', 'constructor'),
  fc.tuple(fc.string({ unit: 'grapheme', maxLength: 8 }), fc.constantFrom('\u0000', '\ud800', '\udc00')).map(([a, b]) => a + b + a),
);

const nastyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 64 }),
  fc.string({ unit: 'grapheme', maxLength: 64 }),
  specialString,
  fc.integer({ min: 10_000, max: 300_000 }).map((n) => 'x'.repeat(n)),
);

const nastyNumber = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom('1e308', '-1e308', '1e309', '-1e309', '-0', '5e-324', '9007199254740993', '1' + '0'.repeat(400), '0.0000001e-400').map(
    (text) => new RawJson(text),
  ),
).map((n) => (typeof n === 'number' && !Number.isFinite(n) ? new RawJson('1e999') : n));

const leaf = fc.oneof(nastyString, nastyNumber, fc.boolean(), fc.constant(null), fc.uuid(), fc.date({ noInvalidDate: true }).map((d) => d.toISOString()));

const { tree } = fc.letrec<{ tree: unknown }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('tree'), { maxLength: 6 }),
    fc.dictionary(fc.oneof(nastyString, fc.constantFrom('name', 'id', 'traces', 'spans', 'scopes')), tie('tree'), { maxKeys: 6 }),
  ),
}));

const deepNesting = fc.tuple(fc.integer({ min: 50, max: 20_000 }), fc.constantFrom('[', '{"a":'), leaf).map(([depth, open, inner]) => {
  const close = open === '[' ? ']' : '}';
  return new RawJson(open.repeat(depth) + toJsonText(inner) + close.repeat(depth));
});

/** Objects that use the route's real body fields, so values reach the service rather than stopping at the schema. */
const aimedBody = (keys: string[]) =>
  keys.length === 0
    ? fc.dictionary(nastyString, tree, { maxKeys: 4 })
    : fc.record(
        Object.fromEntries(
          keys.map((k) => [k, fc.oneof({ arbitrary: specialString, weight: 4 }, { arbitrary: leaf, weight: 2 }, tree, deepNesting)]),
        ),
        { requiredKeys: [] },
      );

const jsonText = (keys: string[]) =>
  fc
    .oneof({ arbitrary: aimedBody(keys), weight: 4 }, fc.jsonValue(), tree, deepNesting, fc.record({ name: fc.oneof(leaf, deepNesting) }))
    .map(toJsonText);

function pathValue(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.uuid({ version: [4, 7] }),
    fc.constantFrom(...realIds),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).map(encodeURIComponent),
    fc.constantFrom('00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', '%00', '..', '%2F'),
  );
}

function urlFor(route: RegisteredRoute): fc.Arbitrary<string> {
  const names = pathParams(route.url);
  if (names.length === 0) return fc.constant(route.url);
  return fc.tuple(...names.map(() => pathValue())).map((values) =>
    names.reduce((url, name, i) => url.replace(`:${name}`, values[i]!), route.url),
  );
}

/** Known troublemakers, sent first on every route, so the run does not rely on luck to find them. */
function examplesFor(route: RegisteredRoute): [string, string][] {
  const url = pathParams(route.url).reduce((u, name) => u.replace(`:${name}`, realIds[0]!), route.url);
  const values = ['a\u0000b', '\ud800', 'x'.repeat(300_000), new RawJson('1e999'), new RawJson('-0'), new RawJson('['.repeat(5000) + ']'.repeat(5000))];
  const keys = route.bodyKeys.length > 0 ? route.bodyKeys : ['name'];
  return keys.flatMap((key) => values.map((value): [string, string] => [url, toJsonText({ [key]: value })]));
}

function checkResponse(route: RegisteredRoute, res: LightMyRequestResponse): void {
  const where = `${route.method} ${route.url} → ${res.statusCode} ${res.body.slice(0, 300)}`;
  expect(res.statusCode, where).toBeLessThan(500);
  expect(res.body, where).not.toMatch(STACK_FRAME);
  if (res.statusCode === 204) return;
  expect(res.headers['content-type'], where).toMatch(/^application\/json/);
  const body = JSON.parse(res.body) as Record<string, unknown>;
  if (res.statusCode >= 400) {
    expect(typeof body.error, where).toBe('string');
    expect(body.request_id, where).toBe(res.headers['x-request-id']);
  }
}

const mutating = () => routes.filter((r) => MUTATING_METHODS.has(r.method) && !r.access?.public);

describe('fuzzing every state-changing route', () => {
  it('finds the routes to fuzz', () => {
    const labels = mutating().map((r) => `${r.method} ${r.url}`);
    expect(labels).toEqual(expect.arrayContaining(['POST /v1/projects', 'PATCH /v1/projects/:id', 'POST /v1/apikeys', 'DELETE /v1/apikeys/:id']));
  });

  it('never answers 5xx to random JSON', async () => {
    for (const route of mutating()) {
      await fc.assert(
        fc.asyncProperty(urlFor(route), jsonText(route.bodyKeys), async (url, payload) => {
          const res = await ctx.app.inject({
            method: route.method as 'POST',
            url,
            headers: { ...owner, 'content-type': 'application/json' },
            payload,
          });
          checkResponse(route, res);
        }),
        { numRuns: NUM_RUNS, examples: examplesFor(route) },
      );
    }
  });

  it('never answers 5xx to random bytes, as JSON, octet-stream or without a content type', async () => {
    for (const route of mutating()) {
      await fc.assert(
        fc.asyncProperty(
          urlFor(route),
          fc.uint8Array({ maxLength: 4096 }),
          fc.constantFrom('application/json', 'application/json; charset=utf-16', 'application/octet-stream', 'text/plain', undefined),
          async (url, bytes, contentType) => {
            const res = await ctx.app.inject({
              method: route.method as 'POST',
              url,
              headers: { ...owner, ...(contentType ? { 'content-type': contentType } : {}) },
              payload: Buffer.from(bytes),
            });
            checkResponse(route, res);
          },
        ),
        { numRuns: NUM_RUNS },
      );
    }
  });

  it('still serves the tenant normally afterwards', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/projects?status=all', headers: owner });
    expect(res.statusCode).toBe(200);
  });
});

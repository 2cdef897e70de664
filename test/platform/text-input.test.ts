import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerErrorHandling } from '../../src/platform/http-errors.js';
import { parseJsonBody } from '../../src/platform/json-body.js';
import { isUnstorableText, storeOutage } from '../../src/platform/store-errors.js';
import { findUnacceptedText, isAcceptedText } from '../../src/platform/text-input.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';

/**
 * Which text the edge refuses (NUL, unpaired surrogates, broken percent-escapes) and which it
 * passes unchanged (every valid Unicode string), and the store-error classifier's second line:
 * Postgres refusing such text is a 400, not a 500. test/platform/fuzz-strings.test.ts walks every operation.
 */

let ctx: TestContext;
let t: TestTenant;
let owner: Record<string, string>;
beforeAll(async () => {
  ctx = await startApp();
  t = await createTenant(ctx.app);
  owner = bearer(await sessionToken(t.tenantId, 'owner'));
});
afterAll(async () => ctx?.close());

/** The error a real Postgres statement fails with (postgres.js PostgresError). */
async function postgresError(run: () => Promise<unknown>): Promise<Error> {
  try {
    await run();
  } catch (err) {
    return err as Error;
  }
  throw new Error('the statement succeeded');
}

describe('accepted text', () => {
  it('refuses NUL and unpaired surrogates, and nothing else', () => {
    for (const bad of ['\u0000', 'a\u0000b', '\uD800', '\uDBFF', 'x\uDC00', '\uDFFFx', '😀'.slice(0, 1), 'ok\uDE00\uD83D']) {
      expect(isAcceptedText(bad), JSON.stringify(bad)).toBe(false);
    }
    const good = ['', 'plain', '\u200F\u200E\u202E\u2066', '😀👩‍👩‍👧🏳️‍🌈', 'é\u0301', '\u0001\u001f\u007f', '\uFEFF\uFFFD\uFFFF', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', '%E0%A4%A'];
    for (const ok of good) expect(isAcceptedText(ok), JSON.stringify(ok)).toBe(true);
  });

  it('names the first refused key or string by its path', () => {
    expect(findUnacceptedText({ a: 'ok', filter: { name: 'x\u0000' } }, 'body')).toEqual({
      path: 'body.filter.name',
      message: 'must not contain NUL characters or unpaired UTF-16 surrogates',
    });
    expect(findUnacceptedText({ tags: ['a', '\uD800'] }, 'body')?.path).toBe('body.tags.1');
    expect(findUnacceptedText({ metadata: { 'k\u0000': 1 } }, 'body')).toEqual({
      path: 'body.metadata',
      message: 'keys must not contain NUL characters or unpaired UTF-16 surrogates',
    });
    expect(findUnacceptedText({ a: ['\u200F', { b: '😀' }] }, 'body')).toBeUndefined();
  });

  it('keeps OTLP telemetry: unpaired surrogates become U+FFFD, NUL stays (the default of parseJsonBody)', () => {
    expect(parseJsonBody('{"a":"x\\ud83d","b":["\\u0000","\\udc00y"],"\\ud800":"\\u200f😀"}')).toEqual({
      a: 'x\uFFFD',
      b: ['\u0000', '\uFFFDy'],
      '\uFFFD': '\u200F😀',
    });
    expect(() => parseJsonBody('{"a":"x\\ud83d"}', { text: 'refuse' })).toThrow('body.a: must not contain NUL characters or unpaired UTF-16 surrogates');
  });
  it('finds NUL and unpaired surrogates however the JSON text spells them, and only those', () => {
    const refuse = (text: string) => () => parseJsonBody(text, { text: 'refuse' });
    expect(refuse('{"a":"\\u0000"}')).toThrow('body.a:');
    expect(refuse('{"a":["ok","\\uDc00"]}')).toThrow('body.a.1:');
    expect(refuse('{"a":"\uD800"}')).toThrow('body.a:'); // raw, in text that did not come from UTF-8
    // An escaped backslash before u0000, and a pair written as escapes (Python's ensure_ascii), are text.
    expect(parseJsonBody('{"a":"\\\\u0000"}', { text: 'refuse' })).toEqual({ a: '\\u0000' });
    expect(parseJsonBody('{"a":"\\ud83d\\ude00 \\u200f"}', { text: 'refuse' })).toEqual({ a: '😀 \u200F' });
  });
});

describe('at the edge', () => {
  it('passes RTL marks, emoji and other valid Unicode through unchanged', async () => {
    const name = '\u200Fמוצר\u200E 😀 e\u0301 \u202Etxet';
    const created = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: owner, payload: { name } });
    expect(created.statusCode).toBe(201);
    const read = await ctx.app.inject({ method: 'GET', url: `/v1/projects/${created.json().id}`, headers: owner });
    expect(read.json().name).toBe(name);
    const listed = await ctx.app.inject({ method: 'GET', url: `/v1/dlq?kind=${encodeURIComponent(name)}`, headers: owner });
    expect(listed.statusCode).toBe(200);
  });

  it('refuses NUL in a query parameter, a path parameter and a body field as a 400 naming it', async () => {
    const cases: [string, string, Record<string, unknown> | undefined, string][] = [
      ['GET', '/v1/dlq?kind=a%00b', undefined, 'query.kind'],
      ['GET', '/v1/evals?metric_name=%00', undefined, 'query.metric_name'],
      ['PUT', '/v1/model-prices/gpt%00', { input_per_million: 1, output_per_million: 1 }, 'params.model'],
      ['POST', '/v1/eval-rules', { name: 'r', metric_name: 'm', filter: { name: 'a\u0000b' }, config: { provider: 'builtin', preset: 'json_valid' } }, 'body.filter.name'],
      ['POST', '/v1/failure-rules', { name: 'r', match: { error_regex: '\uD800' } }, 'body.match.error_regex'],
      ['POST', '/v1/ingest', { project_id: t.projectId, name: 't', input: 'x\uDFFF', output: '', spans: [] }, 'body.input'],
    ];
    for (const [method, url, payload, field] of cases) {
      const res = await ctx.app.inject({ method: method as 'GET', url, headers: owner, ...(payload ? { payload } : {}) });
      expect(res.statusCode, `${method} ${url}`).toBe(400);
      expect(res.json(), `${method} ${url}`).toMatchObject({ code: 'bad_request', request_id: res.headers['x-request-id'] });
      expect(res.json().error).toBe(`${field}: must not contain NUL characters or unpaired UTF-16 surrogates`);
    }
  });

  it('refuses broken percent-encoding in a query string or a path as a 400 in the error shape', async () => {
    for (const raw of ['%E0%A4%A', '%ED%A0%80', '%FF', '100%', '%zz']) {
      const res = await ctx.app.inject({ method: 'GET', url: `/v1/dlq?state=open&kind=${raw}`, headers: owner });
      expect(res.statusCode, raw).toBe(400);
      expect(res.json()).toMatchObject({ code: 'bad_request', request_id: res.headers['x-request-id'] });
      expect(res.json().error).toMatch(/^query\.kind: invalid percent-encoding/);
    }
    const path = await ctx.app.inject({ method: 'PUT', url: '/v1/model-prices/gpt%E0%A4%A', headers: owner, payload: {} });
    expect(path.statusCode).toBe(400);
    expect(path.headers['x-request-id']).toBeTruthy();
    expect(path.json()).toEqual({ error: expect.stringContaining('not a valid URL'), code: 'bad_request', request_id: path.headers['x-request-id'] });
    // A path parameter longer than the router takes is refused in the same shape.
    const long = await ctx.app.inject({ method: 'GET', url: `/v1/sessions/${'s'.repeat(300)}`, headers: owner });
    expect(long.statusCode).toBe(400);
    expect(long.json()).toMatchObject({ code: 'bad_request', request_id: long.headers['x-request-id'] });
  });
});

describe('Postgres refusing text (the classifier, second line behind the edge)', () => {
  it('recognises the errors of NUL in text, NUL in jsonb and an unpaired surrogate in json, and nothing else', async () => {
    const { sql } = ctx.stores;
    const nulText = await postgresError(() => sql`select ${'a\u0000b'}::text`);
    // Objects go to jsonb JSON.stringify'd: NUL as \u0000, an unpaired surrogate as \ud800.
    const nulJsonb = await postgresError(() => sql`select ${sql.json({ a: 'a\u0000b' })}::jsonb`);
    const surrogateJson = await postgresError(() => sql`select ${sql.json({ a: '\uD800' })}::jsonb`);
    for (const err of [nulText, nulJsonb, surrogateJson]) {
      expect(isUnstorableText(err), `${(err as { code?: string }).code} ${err.message}`).toBe(true);
      expect(storeOutage(err)).toBeUndefined();
    }
    expect((nulText as { code?: string }).code).toBe('22021');
    expect((nulJsonb as { code?: string }).code).toBe('22P05');
    expect((surrogateJson as { code?: string }).code).toBe('22P02');
    // Other invalid input is our bug, not the client's text: still a 500.
    expect(isUnstorableText(await postgresError(() => sql`select ${'nope'}::uuid`))).toBe(false);
    expect(isUnstorableText(await postgresError(() => sql`select 1/0`))).toBe(false);
    expect(isUnstorableText(new Error('invalid byte sequence'))).toBe(false);
    expect(isUnstorableText(new Error('wrapped', { cause: nulText }))).toBe(true);
  });

  it('answers a route whose statement Postgres refused for its text with a 400, not a 500', async () => {
    const app = Fastify({ logger: false });
    registerErrorHandling(app);
    app.get('/nul', async () => ctx.stores.sql`select ${'a\u0000b'}::text`);
    app.get('/uuid', async () => ctx.stores.sql`select ${'nope'}::uuid`);
    const nul = await app.inject({ method: 'GET', url: '/nul' });
    expect(nul.statusCode).toBe(400);
    expect(nul.json()).toMatchObject({ code: 'bad_request', error: expect.stringMatching(/NUL characters or unpaired UTF-16 surrogates/) });
    expect((await app.inject({ method: 'GET', url: '/uuid' })).statusCode).toBe(500);
    // The connection is still usable afterwards.
    expect(await ctx.stores.sql`select 1 as one`).toEqual([{ one: 1 }]);
    await app.close();
  });
});

import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { anLlmConnection, create } from '../builders/resources.js';

/**
 * Every operation of GET /v1/openapi.json, with hard strings in every string query parameter,
 * path parameter and body field: NUL, unpaired surrogates, a right-to-left mark, 10 kB of text,
 * broken percent-encoding. Never a 5xx; every refusal is a JSON error body with `error`, `code` and
 * `request_id`; NUL, unpaired surrogates and broken escapes are refused at the edge as a 400
 * `bad_request` naming the field; valid Unicode is never refused for being such text.
 */

type Json = Record<string, unknown>;
type Schema = Json;
interface Parameter {
  name: string;
  in: 'query' | 'path' | 'header';
  required?: boolean;
  schema?: Schema;
}
interface Operation {
  method: string;
  path: string;
  parameters: Parameter[];
  body: Schema | undefined;
}

/** Stands for "the key of a record" in a field path: the probe becomes a key rather than a value. */
const KEY = Symbol('key');
type Segment = string | number | typeof KEY;

const NOW = new Date();
const HOUR_AGO = new Date(NOW.getTime() - 3_600_000);
const LONG = 'ab\u200Fé😀'.repeat(2_048); // valid text: 12,288 UTF-16 units, 22 KiB as UTF-8
const TEXT_REFUSAL = /NUL characters|surrogate|percent-encoding|not a valid URL/;
// A provider outside the service failed (the tenant's LLM connection that the walk created points
// at a host that does not resolve here): a documented 502, not the service failing.
const UPSTREAM_CODES = new Set(['search.embedder_failed']);

/** How the edge must answer a probe: refused as a 400 naming the field, or never refused for its text. */
type Expect = 'refused' | 'valid';
interface BodyProbe {
  label: string;
  value: string;
  expect: Expect;
}
interface UrlProbe {
  label: string;
  /** Already percent-encoded (or deliberately not). */
  raw: string;
  expect: Expect | 'no-5xx';
}

const BODY_PROBES: BodyProbe[] = [
  { label: 'NUL', value: 'a\u0000b', expect: 'refused' },
  { label: 'lone high surrogate', value: '\uD800', expect: 'refused' },
  { label: 'lone low surrogate', value: 'x\uDFFFy', expect: 'refused' },
  { label: 'RTL mark', value: '\u200Fabc\u200F', expect: 'valid' },
  { label: '10 kB', value: LONG, expect: 'valid' },
  { label: 'percent text', value: '%E0%A4%A', expect: 'valid' },
];

const URL_PROBES: UrlProbe[] = [
  { label: 'NUL', raw: 'a%00b', expect: 'refused' },
  { label: 'lone surrogate as UTF-8 bytes', raw: '%ED%A0%80', expect: 'refused' },
  // Not sendable over HTTP; light-my-request turns it into U+FFFD. Must simply not break anything.
  { label: 'raw lone surrogate', raw: '\uD800', expect: 'no-5xx' },
  { label: 'RTL mark', raw: encodeURIComponent('\u200Fabc\u200F'), expect: 'valid' },
  { label: '10 kB', raw: encodeURIComponent(LONG), expect: 'valid' },
  { label: 'truncated escape', raw: '%E0%A4%A', expect: 'refused' },
  { label: 'not an escape', raw: 'a%ZZ', expect: 'refused' },
];

let ctx: TestContext;
let t: TestTenant;
let owner: Record<string, string>;
let doc: { paths: Record<string, Record<string, Json>>; components?: { schemas?: Record<string, Schema> } };
let operations: Operation[];
/** A stored trace, for the fields that name one (feedback, evals, dataset items). */
let traceId: string = randomUUID();

function deref(s: Schema | undefined): Schema {
  let node = s ?? {};
  for (let i = 0; i < 8 && typeof node.$ref === 'string'; i++) {
    node = doc.components?.schemas?.[(node.$ref as string).split('/').pop()!] ?? {};
  }
  return node;
}

const branchesOf = (s: Schema): Schema[] | undefined => (s.anyOf ?? s.oneOf ?? s.allOf) as Schema[] | undefined;
const typeOf = (s: Schema): string | undefined => (Array.isArray(s.type) ? (s.type as string[]).find((x) => x !== 'null') : (s.type as string | undefined));
const isAny = (s: Schema) => !s.type && !branchesOf(s) && !s.enum && !('const' in s) && !s.properties;

/** Paths to every string field (and record key) of a schema, across all its branches. */
function stringPaths(schema: Schema | undefined, prefix: Segment[] = [], depth = 0): Segment[][] {
  const s = deref(schema);
  if (depth > 8) return [];
  const branches = branchesOf(s);
  if (branches) return branches.flatMap((b) => stringPaths(b, prefix, depth + 1));
  const type = typeOf(s);
  if (type === 'string' || isAny(s)) return [prefix];
  if (type === 'array') return stringPaths(s.items as Schema, [...prefix, 0], depth + 1);
  if (type !== 'object') return [];
  const found = Object.entries((s.properties ?? {}) as Record<string, Schema>).flatMap(([k, sub]) => stringPaths(sub, [...prefix, k], depth + 1));
  const extra = s.additionalProperties;
  if (extra && typeof extra === 'object') found.push([...prefix, KEY], ...stringPaths(extra as Schema, [...prefix, 'k'], depth + 1));
  return found;
}

const samePath = (a: Segment[], b: Segment[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const reaches = (s: Schema, target: Segment[]) => stringPaths(s).some((p) => samePath(p, target));

let counter = 0;
const PATTERN_CANDIDATES = () => [`v${++counter}`, 'gpt-4o', 'x', 'abc', 'A1', NOW.toISOString(), '1', 'https://example.com/x', randomUUID()];

function sampleString(s: Schema, name: string): string {
  const format = s.format as string | undefined;
  if (name === 'project_id') return t.projectId;
  if (name === 'trace_id') return traceId;
  if (format === 'uuid') return randomUUID();
  if (format === 'date-time') return (/from|start|since/.test(name) ? HOUR_AGO : NOW).toISOString();
  if (format === 'date') return NOW.toISOString().slice(0, 10);
  if (format === 'email') return `fuzz-${++counter}@example.com`;
  if (format === 'uri' || format === 'url') return 'https://example.com/';
  const min = Number(s.minLength ?? 1);
  const max = Number(s.maxLength ?? 1_000);
  const fits = (v: string) => v.length >= min && v.length <= max && (!s.pattern || new RegExp(s.pattern as string, 'u').test(v));
  const candidates = PATTERN_CANDIDATES().map((v) => (v.length < min ? v.padEnd(min, 'x') : v));
  return candidates.find(fits) ?? candidates[0]!;
}

function sampleNumber(s: Schema, integer: boolean): number {
  let v = 1;
  const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? Number(s.exclusiveMinimum) + (integer ? 1 : 0.5) : undefined);
  const max = s.maximum ?? (s.exclusiveMaximum !== undefined ? Number(s.exclusiveMaximum) - (integer ? 1 : 0.5) : undefined);
  if (min !== undefined && v < Number(min)) v = Number(min);
  if (max !== undefined && v > Number(max)) v = Number(max);
  return v;
}

/**
 * A valid-ish value of `schema`: its required fields only, plus the fields on the way to `target`,
 * where `leaf` goes (as the value, or as a record key when the path ends in KEY).
 */
function build(schema: Schema | undefined, target?: Segment[], leaf?: string, name = ''): unknown {
  const s = deref(schema);
  if (target && target.length === 0) return leaf;
  const branches = branchesOf(s);
  if (branches) {
    const options = branches.map(deref).filter((b) => b.type !== 'null');
    const pick = (target ? options.find((b) => reaches(b, target)) : undefined) ?? options[0] ?? {};
    return build(pick, target, leaf, name);
  }
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  const type = typeOf(s);
  if (type === 'object' || (!type && s.properties)) {
    const out: Json = {};
    const props = (s.properties ?? {}) as Record<string, Schema>;
    const required = new Set((s.required ?? []) as string[]);
    for (const [k, sub] of Object.entries(props)) {
      if (target?.[0] === k) out[k] = build(sub, target.slice(1), leaf, k);
      // The tenant's project, optional or not: a session token names no default project.
      else if (required.has(k) || k === 'project_id') out[k] = build(sub, undefined, undefined, k);
    }
    const head = target?.[0];
    if (target && head !== undefined && !(typeof head === 'string' && head in props)) {
      const extra = (typeof s.additionalProperties === 'object' ? s.additionalProperties : {}) as Schema;
      if (head === KEY) out[leaf!] = build(extra, undefined, undefined, 'k');
      else out[String(head)] = build(extra, target.slice(1), leaf, String(head));
    }
    return out;
  }
  if (type === 'array') {
    const n = Math.max(Number(s.minItems ?? 0), target ? 1 : 0);
    return Array.from({ length: n }, (_, i) => build(s.items as Schema, target && i === 0 ? target.slice(1) : undefined, leaf, name));
  }
  if (type === 'string') return sampleString(s, name);
  if (type === 'integer' || type === 'number') return sampleNumber(s, type === 'integer');
  if (type === 'boolean') return true;
  if (type === 'null') return null;
  return 'x';
}

const fieldName = (path: Segment[]) => path.map((seg) => (seg === KEY ? '' : String(seg))).filter(Boolean).join('.');
const isStringParam = (p: Parameter) => {
  const s = deref(p.schema);
  const branches = branchesOf(s)?.map(deref);
  return branches ? branches.some((b) => typeOf(b) === 'string') : typeOf(s) === 'string' || isAny(s);
};

/** Real resources for path ids where the collection can create one from a valid-ish body. */
const created = new Map<string, Promise<Json | undefined>>();

function resourceOf(collection: string): Promise<Json | undefined> {
  if (!created.has(collection)) {
    created.set(
      collection,
      (async () => {
        const op = operations.find((o) => o.method === 'POST' && o.path === collection);
        if (!op) return undefined;
        const url = await fillPath(op);
        const res = await send(op, url, op.body ? build(op.body) : undefined);
        if (res.statusCode >= 300) return undefined;
        const body = res.json() as Json;
        const listed = Object.values(body).find((v): v is Json[] => Array.isArray(v) && typeof v[0] === 'object');
        return typeof body.id === 'string' ? body : listed?.[0];
      })(),
    );
  }
  return created.get(collection)!;
}

/** The operation's path with every parameter filled (a real resource where one can be made); `probe` replaces one raw. */
async function fillPath(op: Operation, probe?: { name: string; raw: string }): Promise<string> {
  let url = op.path;
  for (const p of op.parameters.filter((x) => x.in === 'path')) {
    const before = op.path.slice(0, op.path.indexOf(`{${p.name}}`) - 1);
    let value: string;
    if (probe?.name === p.name) value = probe.raw;
    else {
      const real = await resourceOf(before);
      const fromResource = p.name === 'name' ? real?.name : real?.id;
      value = encodeURIComponent(typeof fromResource === 'string' ? fromResource : String(build(p.schema, undefined, undefined, p.name)));
    }
    url = url.replace(`{${p.name}}`, value);
  }
  return url;
}

function queryFor(op: Operation, probe?: { name: string; raw: string }): string {
  const parts = op.parameters
    .filter((p) => p.in === 'query' && (p.required || p.name === probe?.name))
    .map((p) => `${encodeURIComponent(p.name)}=${p.name === probe?.name ? probe.raw : encodeURIComponent(String(build(p.schema, undefined, undefined, p.name)))}`);
  return parts.length > 0 ? `?${parts.join('&')}` : '';
}

function send(op: Operation, url: string, body: unknown): Promise<LightMyRequestResponse> {
  return ctx.app.inject({
    method: op.method as 'POST',
    url,
    headers: body === undefined ? owner : { ...owner, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

const failures: string[] = [];

/**
 * The probes of one field, one after another: concurrency is not under test here (concurrent new
 * versions of one prompt fail on their own, and on a loaded machine a burst of reads can time out
 * opening Postgres connections, a correct 503 that would make this test flaky).
 */
async function eachProbe<P>(probes: P[], run: (probe: P) => Promise<void>): Promise<void> {
  for (const probe of probes) await run(probe);
}

/** Collects (rather than throws) every broken expectation, so one run reports them all. */
function check(where: string, res: LightMyRequestResponse, expectation: Expect | 'no-5xx', field: string): void {
  const fail = (why: string): void => void failures.push(`${where} → ${res.statusCode} ${res.body.slice(0, 200)}: ${why}`);
  if (res.statusCode === 502 && UPSTREAM_CODES.has((res.json() as Json).code as string)) return;
  if (res.statusCode >= 500) return fail('a 5xx');
  if (res.statusCode >= 400) {
    let body: Json;
    try {
      body = res.json() as Json;
    } catch {
      return fail('error body is not JSON');
    }
    if (typeof body.error !== 'string' || typeof body.code !== 'string') return fail('error body lacks error or code');
    if (body.request_id !== res.headers['x-request-id']) return fail('error body lacks the request_id of X-Request-Id');
    if (expectation === 'valid' && TEXT_REFUSAL.test(body.error)) return fail('valid text refused as if it were not');
  }
  if (expectation === 'refused') {
    const body = res.statusCode >= 400 ? (res.json() as Json) : {};
    if (res.statusCode !== 400 || body.code !== 'bad_request') return fail('not refused as 400 bad_request');
    if (!String(body.error).includes(field)) return fail(`the message does not name ${field}`);
  }
}

beforeAll(async () => {
  ctx = await startApp();
  // Enterprise: every plan gate open, and limits far above the ~2,000 requests of this run.
  t = await createTenant(ctx.app, 'enterprise');
  owner = bearer(await sessionToken(t.tenantId, 'owner'));
  const res = await ctx.app.inject({ method: 'GET', url: '/v1/openapi.json', headers: owner });
  expect(res.statusCode).toBe(200);
  doc = res.json();
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      parameters: (op.parameters ?? []) as Parameter[],
      body: ((op.requestBody as Json | undefined)?.content as Record<string, { schema?: Schema }> | undefined)?.['application/json']?.schema,
    })),
  );
  // Something for the walk's bodies to refer to: a stored trace, and LLM credentials (eval rules need them).
  const trace = await ctx.app.inject({
    method: 'POST',
    url: '/v1/ingest',
    headers: owner,
    payload: { project_id: t.projectId, name: 'seed', input: 'q', output: 'a', spans: [] },
  });
  if (trace.statusCode < 300) traceId = (trace.json() as { id: string }).id;
  await create(ctx.app, '/v1/llm-connections', owner, anLlmConnection({ api_key: 'sk-fuzz' }));
  // Deletions last, so the resources they remove serve every other operation first.
  operations.sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
});
afterAll(async () => ctx?.close());

describe('hard strings in every string parameter and body field of every operation', () => {
  it('never answers 5xx, answers every refusal in the error shape, and refuses NUL, lone surrogates and broken escapes as 400s naming the field', async () => {
    expect(operations.length).toBeGreaterThan(100);
    let requests = 0;
    let bodyFields = 0;
    for (const op of operations) {
      const label = `${op.method} ${op.path}`;
      for (const p of op.parameters.filter((x) => x.in === 'query' && isStringParam(x))) {
        const url = await fillPath(op);
        await eachProbe(URL_PROBES, async (probe) => {
          const res = await send(op, url + queryFor(op, { name: p.name, raw: probe.raw }), op.body ? build(op.body) : undefined);
          requests++;
          check(`${label} query.${p.name} = ${probe.label}`, res, probe.expect, `query.${p.name}`);
        });
      }
      for (const p of op.parameters.filter((x) => x.in === 'path')) {
        await eachProbe(URL_PROBES, async (probe) => {
          const url = await fillPath(op, { name: p.name, raw: probe.raw });
          const res = await send(op, url + queryFor(op), op.body ? build(op.body) : undefined);
          requests++;
          // A broken escape in a path fails in the router, before any parameter has a name.
          const field = probe.raw.includes('%00') ? `params.${p.name}` : 'path';
          check(`${label} params.${p.name} = ${probe.label}`, res, probe.expect, field);
        });
      }
      if (!op.body) continue;
      const url = (await fillPath(op)) + queryFor(op);
      const seen = new Set<string>();
      for (const path of stringPaths(op.body)) {
        const key = path.map(String).join('/');
        if (seen.has(key)) continue;
        seen.add(key);
        bodyFields++;
        const field = ['body', fieldName(path)].filter(Boolean).join('.');
        await eachProbe(BODY_PROBES, async (probe) => {
          const res = await send(op, url, build(op.body, path, probe.value));
          requests++;
          check(`${label} ${field}${path.at(-1) === KEY ? ' (a key)' : ''} = ${probe.label}`, res, probe.expect, field);
        });
      }
    }
    expect(failures).toEqual([]);
    // The walk reached what it is meant to: dozens of body fields, well over a thousand requests.
    expect(bodyFields).toBeGreaterThan(100);
    expect(requests).toBeGreaterThan(1_000);
  });

  it('still serves the tenant normally afterwards', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/projects', headers: owner });
    expect(res.statusCode).toBe(200);
  });
});

import { validate } from '@readme/openapi-parser';
import swagger from '@fastify/swagger';
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, type AccessPolicy } from '../../src/platform/access.js';
import { ERROR_CODES, ERROR_SCHEMA_REF, openApiOptions, routeErrorCodes } from '../../src/platform/openapi.js';
import { PLAN_NAMES } from '../../src/platform/plans.js';
import { errorBody } from '../../src/platform/schemas.js';
import { TRANSITIONS } from '../../src/modules/prompts/deployments.js';
import { RETENTION_ROLES } from '../../src/modules/projects/service.js';
import { AUTHOR_ONLY } from '../../src/modules/saved-filters/service.js';
import { bearer, createTenant, sessionToken, type TestContext, type TestTenant } from '../helpers/app.js';
import { MUTATING_METHODS, startAppWithRoutes, toOpenApiPath, type RegisteredRoute } from '../helpers/routes.js';

type Json = Record<string, unknown>;
interface Operation {
  summary?: string;
  'x-access'?: Json;
  'x-from-states'?: string[];
  'x-field-roles'?: Json;
  'x-author-only'?: Json;
  security?: unknown[];
  responses: Record<string, Json>;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json> };
}

let ctx: TestContext;
let routes: RegisteredRoute[];
let doc: Document;
let t: TestTenant;
beforeAll(async () => {
  ({ ctx, routes } = await startAppWithRoutes());
  t = await createTenant(ctx.app);
  const res = await ctx.app.inject({ method: 'GET', url: '/v1/openapi.json', headers: t.auth });
  expect(res.statusCode).toBe(200);
  doc = res.json() as Document;
});
afterAll(async () => ctx?.close());

const operations = (d: Document) =>
  Object.entries(d.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ label: `${method.toUpperCase()} ${path}`, op })));

/** Routes the document must describe: everything served except HEAD twins and `schema.hide`. */
const documented = () => routes.filter((r) => !r.hidden && r.method !== 'HEAD');
const operationOf = (d: Document, r: RegisteredRoute) => d.paths[toOpenApiPath(r.url)]?.[r.method.toLowerCase()];

/** Every node of a schema tree that satisfies `match`. */
function findNodes(node: unknown, match: (n: Json) => boolean, found: Json[] = []): Json[] {
  if (Array.isArray(node)) node.forEach((n) => findNodes(n, match, found));
  else if (node && typeof node === 'object') {
    if (match(node as Json)) found.push(node as Json);
    Object.values(node).forEach((n) => findNodes(n, match, found));
  }
  return found;
}

const referencesErrorSchema = (response: Json) => findNodes(response, (n) => n.$ref === ERROR_SCHEMA_REF).length > 0;

/** The codes an error response's shared-Error branch names (`allOf: [Error, {code: {enum}}]`). */
function codesOf(response: Json | undefined): string[] {
  const branches = findNodes(response, (n) => Array.isArray(n.allOf) && (n.allOf as Json[]).some((s) => s.$ref === ERROR_SCHEMA_REF));
  return branches.flatMap((b) => findNodes(b.allOf, (n) => Array.isArray((n.code as Json | undefined)?.enum)).flatMap((n) => (n.code as Json).enum as string[]));
}

const isErrorStatus = (status: string) => /^[45]\d\d$/.test(status);

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

describe('GET /v1/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document (@readme/openapi-parser: the official 3.1 schema plus its semantic rules)', async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid ? [] : result.errors.map((e) => e.message)).toEqual([]);
  });

  it('the validator refuses a broken copy of it (so a pass above means something)', async () => {
    const broken = structuredClone(doc);
    const getTrace = broken.paths['/v1/traces/{id}']!.get! as Operation & { parameters?: unknown[] };
    delete getTrace.responses['500']!.description;
    getTrace.parameters = [];
    const result = await validate(broken as never);
    expect(result.valid).toBe(false);
  });

  it('gives every operation a summary, x-access and error responses that reference the shared Error schema', () => {
    const ops = operations(doc);
    expect(ops.length).toBeGreaterThanOrEqual(29);
    const problems = ops.flatMap(({ label, op }) => {
      const errors = Object.entries(op.responses).filter(([status]) => isErrorStatus(status));
      return [
        ...(op.summary?.trim() ? [] : [`${label}: no summary`]),
        ...(op['x-access'] ? [] : [`${label}: no x-access`]),
        ...(errors.some(([, response]) => referencesErrorSchema(response)) ? [] : [`${label}: no error response with the Error schema`]),
        ...errors.filter(([, response]) => typeof response.description !== 'string' || response.description === '').map(([s]) => `${label}: ${s} has no description`),
      ];
    });
    expect(problems).toEqual([]);
  });

  it('registers the shared error body once, as the Error component', () => {
    const component = doc.components.schemas.Error!;
    expect(component).toEqual(expect.objectContaining({ type: 'object', required: ['error', 'code', 'request_id'] }));
    expect(Object.keys(component.properties as Json)).toEqual(expect.arrayContaining(['details', 'required_plan', 'retry_after']));
    // Only the shared body is a component: no per-route copies of it.
    expect(Object.keys(doc.components.schemas)).toEqual(['Error']);
  });

  it("documents exactly the routes the app serves, each with x-access taken from the route's own policy", () => {
    expect(documented().length).toBe(operations(doc).length);
    const mismatched = documented().flatMap((r) => {
      const op = operationOf(doc, r);
      const policy = r.access!;
      if (!op) return [`${r.method} ${r.url}: not documented`];
      const expected = policy.public
        ? { public: true }
        : { tokens: policy.tokens, roles: policy.roles, scope: policy.scope, plan: policy.plan ?? null, rate_bucket: policy.rateBucket ?? 'default' };
      const problems = [];
      if (JSON.stringify(op['x-access']) !== JSON.stringify(expected)) problems.push(`${r.method} ${r.url}: x-access ${JSON.stringify(op['x-access'])}`);
      // A public route needs no credential, and says so; the rest inherit the document's bearer requirement.
      if (Boolean(policy.public) !== Boolean(op.security && op.security.length === 0)) problems.push(`${r.method} ${r.url}: security ${JSON.stringify(op.security)}`);
      return problems;
    });
    expect(mismatched).toEqual([]);
  });

  it('lists the plans lowest first (x-plans), the states each state-moving operation accepts (x-from-states) the role-limited body fields (x-field-roles) and the author-only operations (x-author-only), from the code that enforces them', () => {
    expect((doc as unknown as Json)['x-plans']).toEqual([...PLAN_NAMES]);
    const declared = (key: 'x-from-states' | 'x-field-roles' | 'x-author-only') => Object.fromEntries(operations(doc).flatMap(({ label, op }) => (op[key] ? [[label, op[key]]] : [])));
    expect(declared('x-field-roles')).toEqual({ 'PATCH /v1/projects/{id}': { retention_days: [...RETENTION_ROLES] } });
    const authorOnly = { field: AUTHOR_ONLY.field, or_roles: [...AUTHOR_ONLY.orRoles] };
    expect(declared('x-author-only')).toEqual({ 'PATCH /v1/saved-filters/{id}': authorOnly, 'DELETE /v1/saved-filters/{id}': authorOnly });
    const fromStates = declared('x-from-states');
    expect(fromStates).toEqual({
      'POST /v1/control/actions/{id}/approve': ['pending_approval'],
      'POST /v1/control/actions/{id}/reject': ['pending_approval'],
      'POST /v1/prompts/deployments/{id}/approve': [...TRANSITIONS.approve.from],
      'POST /v1/prompts/deployments/{id}/reject': [...TRANSITIONS.reject.from],
      'POST /v1/prompts/deployments/{id}/rollback': [...TRANSITIONS.rollback.from],
    });
  });

  it('lists the codes each operation declares or its policy and inputs imply, at their statuses', () => {
    const op = (method: string, path: string) => doc.paths[path]![method]!;
    const ingest = op('post', '/v1/ingest');
    expect(codesOf(ingest.responses['409'])).toEqual(['trace_exists']);
    expect(codesOf(ingest.responses['503'])).toEqual(['service_unavailable']);
    expect(codesOf(ingest.responses['403'])).toEqual(['scope_forbidden', 'role_forbidden', 'error.project.archived']);
    expect(codesOf(ingest.responses['422'])).toEqual(['validation_error']);
    expect(ingest.responses['409']!.description).toContain('`trace_exists`');
    expect(codesOf(op('get', '/v1/traces/{id}').responses['404'])).toEqual(['not_found']);
    expect(codesOf(op('get', '/v1/traces').responses['400'])).toEqual(['bad_request', 'invalid_cursor', 'error.tags_filter_incomplete']);
    expect(codesOf(op('get', '/v1/me').responses['403'])).toEqual(['session_required']);
    expect(codesOf(op('get', '/v1/apikeys').responses['403'])).toEqual(['scope_forbidden']);
    expect(codesOf(op('post', '/v1/projects/{id}/archive').responses['409'])).toEqual(['error.project.cannot_archive_last']);
    // A read open to every token and role has no 403; nothing without a body has a 413.
    expect(op('get', '/v1/traces/{id}').responses['403']).toBeUndefined();
    expect(op('get', '/v1/traces/{id}').responses['413']).toBeUndefined();
    // Public routes: no credential, so no 401 and no rate limit; a 503 only where they read a store.
    expect(Object.keys(op('get', '/healthz').responses)).toEqual(['200', '500']);
    expect(codesOf(op('get', '/v1/audit/verify').responses['400'])).toEqual(['bad_request']);
    expect(op('get', '/v1/audit/verify').responses['422']).toBeUndefined(); // attachValidation: a missing parameter is a 400
    expect(op('get', '/v1/audit/verify').responses['401']).toBeUndefined();
    // Routes with their own error bodies keep them; where the platform answers that status too, either body.
    const batch = op('post', '/v1/ingest/batch').responses;
    expect(codesOf(batch['409'])).toEqual([]);
    expect(JSON.stringify(batch['409'])).toContain('"results"');
    expect((findNodes(batch['403'], (n) => Array.isArray(n.anyOf))[0]!.anyOf as unknown[]).length).toBe(2);
    expect(codesOf(batch['403'])).toEqual(['scope_forbidden', 'role_forbidden']);
    expect(codesOf(batch['401'])).toEqual(['unauthorized']);
    expect(JSON.stringify(op('get', '/readyz').responses['503'])).toContain('"checks"');
  });

  it('documents every refusal the running app gives (probes with missing, restricted and wrong credentials and bodies)', async () => {
    const keyRes = await ctx.app.inject({ method: 'POST', url: '/v1/apikeys', headers: t.auth, payload: { name: 'query only', scopes: ['query'] } });
    expect(keyRes.statusCode).toBe(201);
    const queryKey = bearer(keyRes.json<{ secret: string }>().secret);
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    const zeroId = '00000000-0000-4000-8000-000000000000';

    const undocumented: string[] = [];
    let refusals = 0;
    for (const r of documented()) {
      const url = r.url.replace(/:([A-Za-z0-9_]+)/g, zeroId);
      const mutating = MUTATING_METHODS.has(r.method);
      // Mutating probes must be refused before any handler runs: no credential, a restricted one, or a body Fastify cannot parse.
      const probes: { headers?: Record<string, string>; payload?: string }[] = [
        {},
        { headers: queryKey },
        { headers: viewer },
        ...(mutating
          ? [
              { headers: { ...owner, 'content-type': 'application/xml' }, payload: '<trace/>' },
              { headers: { ...owner, 'content-type': 'application/json' }, payload: '{"unterminated' },
            ]
          : [{ headers: t.auth }, { headers: owner }]),
      ];
      for (const probe of probes) {
        const res = await ctx.app.inject({ method: r.method as 'GET', url, ...probe });
        if (res.statusCode < 400) continue;
        refusals += 1;
        const response = operationOf(doc, r)?.responses[String(res.statusCode)];
        const body = errorBody.safeParse(parseJson(res.body));
        const code = body.success ? body.data.code : undefined;
        const listed = codesOf(response);
        // A status documented with the route's own body only (readiness) has no code list to check.
        const ok = response !== undefined && (listed.length === 0 ? !referencesErrorSchema(response) : code !== undefined && listed.includes(code));
        if (!ok) undocumented.push(`${r.method} ${r.url}: ${res.statusCode} ${code ?? res.body.slice(0, 80)}`);
      }
    }
    expect(refusals).toBeGreaterThan(60);
    expect(undocumented).toEqual([]);
  });
});

describe('routeErrorCodes', () => {
  const facts = (policy: AccessPolicy, methods: string[] = ['GET']) => ({ methods, policy, validatesInput: false, requiresFields: false, declared: [] });

  it('answers a plan gate with 402, or the status the policy names', () => {
    const gated: AccessPolicy = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read', plan: 'team' };
    // Every route that takes sessions may also refuse a first sign-in when the plan's seats are taken.
    expect(routeErrorCodes(facts(gated)).get(402)).toEqual(['plan_upgrade_required', 'seats_quota_exceeded']);
    const webhookTest = routeErrorCodes(facts({ ...gated, roles: WRITERS, planDeniedStatus: 403 }));
    expect(webhookTest.get(402)).toEqual(['seats_quota_exceeded']);
    expect(routeErrorCodes(facts({ ...gated, tokens: ['apikey'] })).get(402)).toEqual(['plan_upgrade_required']);
    expect(webhookTest.get(403)).toEqual(['role_forbidden', 'plan_upgrade_required']);
  });

  it('puts each declared code at its status from ERROR_CODES, after the platform codes of that status', () => {
    const codes = routeErrorCodes({ ...facts({ tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' }), validatesInput: true, declared: ['invalid_cursor', 'not_found'] });
    expect(codes.get(400)).toEqual(['bad_request', 'invalid_cursor']);
    expect(codes.get(ERROR_CODES.not_found.status)).toEqual(['not_found']);
    expect([...codes.keys()]).toEqual([...codes.keys()].sort((a, b) => a - b));
  });

  it('documents the plan gate of a route in a real document, next to its x-access', async () => {
    const app = Fastify({ logger: false }).withTypeProvider<ZodTypeProvider>();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    await app.register(swagger, openApiOptions);
    app.post('/v1/webhooks/:id/test', {
      config: { access: { tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', plan: 'team', planDeniedStatus: 403, audit: 'webhook.test' }, errors: ['not_found'] },
      schema: { summary: 'Send a test event', params: z.object({ id: z.guid() }), response: { 200: z.object({ ok: z.boolean() }) } },
      handler: async () => ({ ok: true }),
    });
    await app.ready();
    const operation = (app.swagger() as unknown as Document).paths['/v1/webhooks/{id}/test']!.post!;
    expect(operation['x-access']).toEqual({ tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', plan: 'team', rate_bucket: 'default' });
    expect(codesOf(operation.responses['403'])).toEqual(['scope_forbidden', 'role_forbidden', 'plan_upgrade_required']);
    expect(codesOf(operation.responses['404'])).toEqual(['not_found']);
    expect(codesOf(operation.responses['402'])).toEqual(['seats_quota_exceeded']); // a session's first sign-in, not the plan gate
    await app.close();
  });
});

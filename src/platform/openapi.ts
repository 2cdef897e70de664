import type { SwaggerOptions, SwaggerTransform } from '@fastify/swagger';
import type { RouteOptions } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ALL_ROLES, ANY_TOKEN, type AccessPolicy } from './access.js';
import type { Role } from './auth.js';
import { deprecationsOf, type Deprecation } from './deprecations.js';
import { PLAN_NAMES } from './plans.js';
import { errorBody } from './schemas.js';

/**
 * The OpenAPI document as the complete contract: every operation carries its access policy
 * (`x-access`) and its error responses, both derived here from the route's own declaration, never
 * written per route. An error response lists the codes the operation can answer with at that
 * status: those its access policy and its inputs imply, plus the ones its config names in `errors`.
 */

/** Every error code an operation can answer with: its status and what it means to a client. */
export const ERROR_CODES = {
  bad_request: { status: 400, meaning: 'The request is malformed: invalid JSON, or a value of the wrong type or shape (`details` names each field).' },
  invalid_cursor: { status: 400, meaning: 'The cursor is malformed or belongs to a listing with other parameters; start again without it.' },
  'error.tags_filter_incomplete': { status: 400, meaning: '`tag_key` and `tag_value` must be sent together.' },
  'embedding.dimension_mismatch': { status: 400, meaning: "A vector's length differs from the project's vector dimension, fixed by its first vector (`expected_dimensions`)." },
  'search.no_embedder': { status: 400, meaning: 'The tenant has no embedding provider: add an openai LLM connection, or search by `query_vector`.' },
  'sql.refused': { status: 400, meaning: 'The SQL is not one SELECT over traces, spans and metrics_1m, or uses what tenant SQL does not allow (table functions, other databases, SETTINGS, FORMAT, functions that read outside the tables); `reason` says which.' },
  'sql.invalid_query': { status: 400, meaning: 'ClickHouse could not run the SQL as written (syntax, unknown column or function, types); the message is the engine\'s and `engine_code` its error code.' },
  'sql.query_too_long': { status: 400, meaning: 'The SQL text is longer than the accepted maximum.' },
  'sql.limit_exceeded': { status: 400, meaning: 'The query went past a bound of tenant SQL (execution time, rows read, result size or memory): narrow it (a time range, a LIMIT, fewer columns).' },
  unauthorized: { status: 401, meaning: 'No credential, or one that is malformed, expired, revoked or unknown.' },
  plan_upgrade_required: { status: 402, meaning: "The tenant's plan is below `required_plan`." },
  trace_quota_exceeded: { status: 402, meaning: "The tenant's monthly trace quota is spent; `required_plan` names a plan with more." },
  eval_quota_exceeded: { status: 402, meaning: "The tenant's monthly evaluation quota is spent (evaluations of POST /v1/eval, eval rules and dataset runs count)." },
  eval_rules_quota_exceeded: { status: 402, meaning: 'The plan allows no more eval rules (Starter: 3).' },
  seats_quota_exceeded: { status: 402, meaning: "The plan's seats (active and invited members; Starter: 3) are all taken: an invitation, or a first sign-in without one, is refused; `required_plan` names a plan with more." },
  session_required: { status: 403, meaning: 'Dashboard-only: needs a session token; API keys are refused.' },
  role_forbidden: { status: 403, meaning: "The caller's role may not perform this operation." },
  scope_forbidden: { status: 403, meaning: "The API key's scopes do not allow this operation." },
  'error.project.archived': { status: 403, meaning: "The target project, or the key's own project, is archived: ingest is refused until it is unarchived." },
  not_found: { status: 404, meaning: "No such resource in the caller's tenant (another tenant's is not found either)." },
  trace_exists: { status: 409, meaning: 'A trace with this id is already stored.' },
  no_active_project: { status: 409, meaning: 'The tenant has no active project to default to.' },
  'control.action_state': { status: 409, meaning: 'The control action is not awaiting approval (only pending_approval actions can be approved or rejected).' },
  'control.no_diff': { status: 409, meaning: 'The control action has no output to compare: an escalation, or a remediation that failed or was rejected.' },
  'prompt.exists': { status: 409, meaning: 'The project already has a prompt of this name; add a version to it instead.' },
  'prompt_deployment.invalid_state': { status: 409, meaning: "The deployment's state does not allow this move (approve: ab_passed; rollback: shipped, monitoring, regressed; reject: any non-terminal state)." },
  'prompt_deployment.open_exists': { status: 409, meaning: 'The prompt already has an open deployment (one at a time per prompt); reject or finish it first.' },
  'dlq.resolved': { status: 409, meaning: 'The DLQ entry was already retried or discarded.' },
  'dlq.not_retryable': { status: 409, meaning: 'The DLQ entry can no longer be retried (what it retries was deleted, or is running again); discard it.' },
  'error.project.cannot_archive_last': { status: 409, meaning: 'The last active project of a tenant cannot be archived.' },
  'member.already_exists': { status: 409, meaning: 'A member or a pending invitation with this email (case-insensitive) already exists in the tenant.' },
  'member.last_owner': { status: 409, meaning: 'The last active owner of a tenant cannot be demoted or removed; make another member owner first.' },
  'data_subject_request.not_export': { status: 409, meaning: 'Only an export request has a file to download.' },
  'data_subject_request.not_ready': { status: 409, meaning: "The export is not completed (queued, running or failed): its file exists once it is completed." },
  'data_subject_request.export_expired': { status: 410, meaning: "The export's file expired (7 days after completion, or at an erasure of the same subject) and was deleted; request a new export." },
  payload_too_large: { status: 413, meaning: 'The body exceeds the size limit.' },
  unsupported_media_type: { status: 415, meaning: 'The Content-Type (or Content-Encoding) is not accepted.' },
  validation_error: { status: 422, meaning: 'A required field is missing (`details` names each).' },
  'eval.no_llm_credentials': { status: 422, meaning: "An LLM judge of a vendor the tenant has no credentials for: add an LLM connection, or the operator sets that vendor's API key." },
  'llm_connection.url.not_https': { status: 422, meaning: 'A tenant-supplied provider base_url must use https.' },
  'llm_connection.url.private_ip': { status: 422, meaning: 'The base_url resolves to a private, loopback, link-local or otherwise non-public address.' },
  'llm_connection.url.unresolvable': { status: 422, meaning: "The base_url's host does not resolve." },
  'webhook.url.not_https': { status: 422, meaning: 'A webhook URL must use https.' },
  'webhook.url.private_ip': { status: 422, meaning: "The webhook URL's host resolves to a private, loopback, link-local or otherwise non-public address." },
  'webhook.url.unresolvable': { status: 422, meaning: "The webhook URL's host does not resolve." },
  rate_limited: { status: 429, meaning: "The tenant's per-minute limit for this operation's rate bucket is spent; retry after `retry_after` seconds (also the Retry-After header)." },
  'sql.too_many_queries': { status: 429, meaning: "The tenant's SQL queries already running are at their maximum; retry after the Retry-After header." },
  internal_error: { status: 500, meaning: 'An unexpected failure; it is logged and its message is not shown.' },
  'search.embedder_failed': { status: 502, meaning: "The tenant's embedding provider failed or timed out; retry later." },
  service_unavailable: { status: 503, meaning: 'A backing store did not answer, or an earlier write of the same trace is still in flight; retry after the Retry-After header.' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Codes the route's own code (its service) can answer with, beyond those its access policy and
     * inputs imply; each is documented at its status from ERROR_CODES.
     */
    errors?: readonly ErrorCode[];
    /**
     * For an operation that moves a resource from one state to another: the states (its `status`)
     * it accepts; from any other it answers 409 (a code its `errors` name). Documented as
     * `x-from-states`, so that a client can say ahead why the move is not open.
     */
    fromStates?: readonly string[];
    /**
     * Body fields that only some of the operation's roles may send (the others get a 403
     * role_forbidden from the service). Documented as `x-field-roles`.
     */
    fieldRoles?: Readonly<Record<string, readonly Role[]>>;
    /**
     * For an operation on one resource that only its author may perform, or one of `orRoles`: the
     * resource's field holding the author's user id (others get a 403 role_forbidden from the
     * service). Documented as `x-author-only` ({field, or_roles}).
     */
    authorOnly?: { field: string; orRoles: readonly Role[] };
  }
}

export const ERROR_SCHEMA_REF = '#/components/schemas/Error';

/** The shared error body (platform/schemas.ts `errorBody`) as the document's one `Error` component. */
const { $schema: _dialect, ...errorJson } = z.toJSONSchema(errorBody, { target: 'draft-2020-12', io: 'output' });
// zod types its output as any JSON Schema; this one is an object schema, as the document's types want.
const errorComponent = errorJson as { type: 'object'; description?: string; properties?: Record<string, object>; required?: string[] };

/** `x-access` of an operation: the route's policy as a client needs it; public routes say only that. */
export function accessExtension(policy: AccessPolicy) {
  if (policy.public) return { public: true as const };
  return {
    tokens: [...policy.tokens],
    roles: [...policy.roles],
    scope: policy.scope,
    plan: policy.plan ?? null,
    rate_bucket: policy.rateBucket ?? 'default',
  };
}

/** What the error responses of a route are derived from. */
export interface RouteErrorFacts {
  methods: readonly string[];
  policy: AccessPolicy;
  /** A zod schema checks the body, querystring or path params: a wrong value is a 400. */
  validatesInput: boolean;
  /** A field a client could leave out is required, and the route does not handle its own validation: a 422. */
  requiresFields: boolean;
  declared: readonly ErrorCode[];
}

// Fastify parses a body on these methods whatever the route declares (json-body.ts, bodyLimit).
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Status → codes the route can answer with, ascending by status. */
export function routeErrorCodes(facts: RouteErrorFacts): Map<number, ErrorCode[]> {
  const { policy } = facts;
  const found: [number, ErrorCode][] = [];
  const add = (code: ErrorCode, status: number = ERROR_CODES[code].status) => found.push([status, code]);
  const takesBody = facts.methods.some((m) => BODY_METHODS.has(m));

  if (facts.validatesInput || takesBody) add('bad_request');
  if (!policy.public) {
    add('unauthorized');
    // The 403s in the order enforceAccess checks them. A scoped key is refused on scope before
    // anything else, so even a dashboard-only write answers it scope_forbidden.
    if (policy.scope !== 'read') add('scope_forbidden');
    if (ANY_TOKEN.some((kind) => !policy.tokens.includes(kind))) add('session_required');
    if (ALL_ROLES.some((role) => !policy.roles.includes(role))) add('role_forbidden');
    if (policy.plan) add('plan_upgrade_required', policy.planDeniedStatus ?? ERROR_CODES.plan_upgrade_required.status);
    // A session's first sign-in provisions its member, refused when the plan's seats are taken.
    if (policy.tokens.includes('session')) add('seats_quota_exceeded');
    add('rate_limited');
    // Authentication reads Postgres (key lookup, user upsert): every guarded route may see a 503.
    add('service_unavailable');
  }
  if (takesBody) {
    add('payload_too_large');
    add('unsupported_media_type');
  }
  if (facts.requiresFields) add('validation_error');
  for (const code of facts.declared) add(code);
  add('internal_error');

  const byStatus = new Map<number, ErrorCode[]>();
  for (const [status, code] of found.sort(([a], [b]) => a - b)) {
    const codes = byStatus.get(status) ?? [];
    if (!codes.includes(code)) codes.push(code);
    byStatus.set(status, codes);
  }
  return byStatus;
}

type JsonSchema = Record<string, unknown>;

/** Whether a JSON schema requires some property anywhere a client could leave one out. */
function requiresSomeField(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.some(requiresSomeField);
  if (!schema || typeof schema !== 'object') return false;
  const s = schema as JsonSchema;
  if (Array.isArray(s.required) && s.required.length > 0) return true;
  const nested = [s.items, s.additionalProperties, s.prefixItems, s.anyOf, s.oneOf, s.allOf];
  if (s.properties && typeof s.properties === 'object') nested.push(...Object.values(s.properties));
  return nested.some(requiresSomeField);
}

const codeList = (codes: readonly ErrorCode[]) => codes.map((code) => `- \`${code}\`: ${ERROR_CODES[code].meaning}`).join('\n');

/** The shared Error body, with `code` narrowed to what this response can carry. */
const errorSchema = (codes: readonly ErrorCode[]) => ({
  allOf: [{ $ref: ERROR_SCHEMA_REF }, { properties: { code: { enum: [...codes] } } }],
});

/**
 * A route's own schema for an error status (batch ingest's per-item failures, readiness) is kept;
 * where the platform can answer that status too (a refused credential, a malformed body), the
 * response is either body.
 */
function errorResponse(codes: readonly ErrorCode[], own: JsonSchema | undefined): JsonSchema {
  if (!own) return { description: codeList(codes), content: { 'application/json': { schema: errorSchema(codes) } } };
  const ownContent = own.content as Record<string, { schema: unknown }> | undefined;
  const ownSchema = ownContent ? Object.values(ownContent)[0]?.schema : own;
  const ownName = typeof own.description === 'string' ? own.description : 'The route-specific body';
  return {
    description: `${ownName}, or the shared Error body with one of:\n${codeList(codes)}`,
    content: { 'application/json': { schema: { anyOf: [ownSchema, errorSchema(codes)] } } },
  };
}

const isErrorStatus = (status: string) => /^[45]\d\d$/.test(status);

function markDeprecatedParameters(querystring: JsonSchema, deprecations: Deprecation[]): JsonSchema {
  const properties = querystring.properties as Record<string, JsonSchema> | undefined;
  if (!properties) return querystring;
  const marked = { ...properties };
  for (const d of deprecations) {
    if (d.kind === 'parameter' && marked[d.parameter!]) marked[d.parameter!] = { ...marked[d.parameter!], deprecated: true };
  }
  return { ...querystring, properties: marked };
}

/**
 * The per-route transform of @fastify/swagger: zod schemas to JSON Schema first
 * (fastify-type-provider-zod), then the summary's companions: `x-access`, the error responses,
 * and no security requirement on public routes.
 */
export const documentRoute: SwaggerTransform = (document) => {
  const transformed = jsonSchemaTransform(document);
  const schema = (transformed.schema ?? {}) as JsonSchema;
  if (schema.hide) return transformed;
  const route: RouteOptions = document.route;
  const policy = route.config?.access;
  if (!policy) throw new Error(`route ${String(route.method)} ${route.url} declares no access policy`);

  const routeSchema = (route.schema ?? {}) as JsonSchema;
  const codes = routeErrorCodes({
    methods: [route.method].flat(),
    policy,
    validatesInput: Boolean(routeSchema.body ?? routeSchema.querystring ?? routeSchema.params),
    requiresFields: !route.attachValidation && (requiresSomeField(schema.body) || requiresSomeField(schema.querystring)),
    declared: route.config?.errors ?? [],
  });

  const own = (schema.response ?? {}) as Record<string, JsonSchema>;
  const response: Record<string, JsonSchema> = Object.fromEntries(Object.entries(own).filter(([status]) => !isErrorStatus(status)));
  for (const [status, statusCodes] of codes) response[status] = errorResponse(statusCodes, own[status]);
  // An error status the route documents and the platform never answers keeps the route's schema as is.
  for (const [status, body] of Object.entries(own)) if (isErrorStatus(status) && !response[status]) response[status] = body;

  const deprecations = [route.method].flat().flatMap((method) => deprecationsOf(method, route.url));
  return {
    url: transformed.url,
    schema: {
      ...schema,
      ...(deprecations.some((d) => d.kind === 'endpoint') ? { deprecated: true } : {}),
      ...(schema.querystring ? { querystring: markDeprecatedParameters(schema.querystring as JsonSchema, deprecations) } : {}),
      ...(policy.public ? { security: [] } : {}),
      'x-access': accessExtension(policy),
      ...(route.config?.fromStates ? { 'x-from-states': [...route.config.fromStates] } : {}),
      ...(route.config?.fieldRoles ? { 'x-field-roles': route.config.fieldRoles } : {}),
      ...(route.config?.authorOnly ? { 'x-author-only': { field: route.config.authorOnly.field, or_roles: [...route.config.authorOnly.orRoles] } } : {}),
      response,
    },
  };
};

/** @fastify/swagger options: the document's frame, the shared Error component and the per-route transform. */
export const openApiOptions: SwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'Looptrace API',
      version: '1.0.0',
      description:
        'Tracing, evaluation and improvement of LLM applications. Contract: spec/api-v1.md.\n\n' +
        'Every operation names its access policy in `x-access`: `{public: true}` for routes without a credential, ' +
        'otherwise `{tokens, roles, scope, plan, rate_bucket}` (`scope`: `read` is open to query-scoped API keys, `write` ' +
        'and `admin` need an unrestricted key; `plan`: the lowest plan allowed, null when any). They are checked in this order: ' +
        'credential (401), rate limit (429), scope (403 `scope_forbidden`), token kind (403 `session_required`), role ' +
        '(403 `role_forbidden`), plan; `x-plans` at the top of the document lists the plans, lowest first. An operation that ' +
        'moves a resource between states names the states it accepts in `x-from-states` (from another: 409); body fields only some of its ' +
        'roles may send are in `x-field-roles`; one only the author of the resource (or a role of `or_roles`) may perform names the author\'s field in `x-author-only`. Every error body is the ' +
        '`Error` schema; each error response lists the `code` values it can carry.',
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'API key (lt_…) or dashboard session JWT' },
      },
      schemas: { Error: errorComponent },
    },
    security: [{ bearer: [] }],
  },
  transform: documentRoute,
  // `x-plans`: the order in which an x-access `plan` ("the lowest plan allowed") is read.
  transformObject: (document) => {
    const openapi = hoistDeprecatedParameters(('openapiObject' in document ? document.openapiObject : {}) as JsonSchema);
    openapi['x-plans'] = [...PLAN_NAMES];
    return openapi;
  },
};

/** @fastify/swagger leaves `deprecated` on a parameter's schema; client generators read it on the parameter. */
function hoistDeprecatedParameters(document: JsonSchema) {
  for (const operations of Object.values((document.paths ?? {}) as Record<string, Record<string, JsonSchema>>)) {
    for (const operation of Object.values(operations)) {
      for (const parameter of (operation.parameters ?? []) as JsonSchema[]) {
        if ((parameter.schema as JsonSchema | undefined)?.deprecated) parameter.deprecated = true;
      }
    }
  }
  return document;
}

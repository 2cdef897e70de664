import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { AuthContext, Authenticator, Role, TokenKind } from './auth.js';
import { AppError } from './errors.js';
import { planAtLeast, type PlanName } from './plans.js';
import { rateLimited, rateLimitHeaders, type RateBucket, type RateLimiter } from './ratelimit.js';

/**
 * `read`: reachable by `query`-scoped keys. `write`: changes state, needs an unrestricted key.
 * `admin`: reads outside the query scope (key management, audit log), also needs an unrestricted key.
 */
export type ScopeRequirement = 'read' | 'write' | 'admin';

export interface AccessPolicy {
  /** No credential at all (health, OpenAPI, public audit verification). */
  public?: true;
  tokens: readonly TokenKind[];
  roles: readonly Role[];
  scope: ScopeRequirement;
  /** Lowest plan that may call the route. */
  plan?: PlanName;
  /** Status of a plan refusal where the spec names one other than 402. */
  planDeniedStatus?: 402 | 403;
  rateBucket?: RateBucket;
  /** Audit action recorded for successful state changes; `false` only for routes that change nothing. */
  audit?: string | false;
  /** A POST that changes nothing (its query does not fit a URL, e.g. a search vector): may be scope 'read', with `audit: false` or an action when such reads are audited (tenant SQL). */
  readOnly?: true;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: AccessPolicy;
  }
  interface FastifyRequest {
    auth?: AuthContext;
    /** Set by handlers to name what a state change touched, for the audit chain. */
    auditResource?: { type: string; id: string | null; details?: Record<string, unknown> };
  }
}

export const ANY_TOKEN: readonly TokenKind[] = ['apikey', 'session'];
export const SESSION_ONLY: readonly TokenKind[] = ['session'];
export const ALL_ROLES: readonly Role[] = ['owner', 'member', 'viewer'];
export const WRITERS: readonly Role[] = ['owner', 'member'];

/** Reads of trace data (traces, sessions, metrics): any token and role, query-scoped keys included, the spec's query rate bucket. */
export const QUERY_READ: AccessPolicy = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read', rateBucket: 'query' };

export const PUBLIC: AccessPolicy = { public: true, tokens: [], roles: [], scope: 'read', audit: false };

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Refuses, at registration time, any route without a policy or a mutating route without an audit action. */
export function assertRouteHasPolicy(route: RouteOptions): void {
  const policy = route.config?.access;
  const methods = [route.method].flat();
  const label = `${methods.join(',')} ${route.url}`;
  if (!policy) throw new Error(`route ${label} declares no access policy`);
  if (policy.public) return;
  if (methods.some((m) => MUTATING.has(m))) {
    if (policy.readOnly) {
      if (methods.some((m) => m !== 'POST') || policy.audit === undefined) throw new Error(`route ${label} is readOnly: POST only, with audit false or an action`);
      return;
    }
    if (policy.scope !== 'write') throw new Error(`route ${label} changes state but is not scope 'write'`);
    if (policy.audit === undefined) throw new Error(`route ${label} changes state but names no audit action`);
  }
}

export function requireAuth(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new AppError(401, 'unauthorized', 'authentication required');
  return request.auth;
}

/**
 * The route's policy against the caller, in a fixed order that the OpenAPI document and the
 * route-policy test rely on. The scope comes first: the spec answers every write with a
 * scope-restricted key `403 scope_forbidden` (Authentication rule 4), whatever else the key could
 * not do either (act as owner, act as a session); then the token kind, the role, the plan.
 */
export function enforceAccess(auth: AuthContext, policy: AccessPolicy): void {
  if (policy.scope !== 'read' && auth.scopes.length > 0) {
    throw new AppError(403, 'scope_forbidden', `key scopes [${auth.scopes.join(', ')}] do not allow this operation`);
  }
  if (!policy.tokens.includes(auth.tokenKind)) {
    throw new AppError(403, 'session_required', 'this endpoint is dashboard-only and cannot be used with an API key');
  }
  if (!policy.roles.includes(auth.role)) {
    throw new AppError(403, 'role_forbidden', `the ${auth.role} role may not perform this operation`);
  }
  if (policy.plan && !planAtLeast(auth.plan, policy.plan)) {
    throw new AppError(policy.planDeniedStatus ?? 402, 'plan_upgrade_required', `requires the ${policy.plan} plan or above`, {
      required_plan: policy.plan,
    });
  }
}

/** Authentication, rate limiting and the route's policy, before the body is even parsed. */
export function registerAccessControl(app: FastifyInstance, authenticator: Authenticator, limiter: RateLimiter): void {
  app.addHook('onRoute', assertRouteHasPolicy);
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const policy = request.routeOptions.config?.access;
    if (policy?.public) return;
    if (!policy) {
      // An unknown route is a 404 for everyone; a valid credential still counts and sees its window.
      const auth = await authenticator.authenticate(request.headers.authorization).catch(() => undefined);
      if (auth) reply.headers(rateLimitHeaders(await limiter.hit(auth.tenantId, auth.plan, 'default')));
      return;
    }
    const auth = await authenticator.authenticate(request.headers.authorization);
    request.auth = auth;
    const window = await limiter.hit(auth.tenantId, auth.plan, policy.rateBucket ?? 'default');
    reply.headers(rateLimitHeaders(window));
    if (window.exceeded) throw rateLimited(window);
    enforceAccess(auth, policy);
  });
}

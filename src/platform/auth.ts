import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../stores/pg.js';
import { sha256 } from './crypto.js';
import { AppError } from './errors.js';
import { observeStoreCall } from './metrics.js';
import type { PlanName } from './plans.js';
import { storableText } from './schemas.js';

export type TokenKind = 'apikey' | 'session';
export type Role = 'owner' | 'member' | 'viewer';
export const API_KEY_PREFIX = 'lt_';

export interface AuthContext {
  tenantId: string;
  plan: PlanName;
  tokenKind: TokenKind;
  /** API keys act as members (never owners). */
  role: Role;
  userId: string | null;
  apiKeyId: string | null;
  /** Empty = full access. */
  scopes: string[];
  /** Project that ingest uses when the body names none (API keys only). */
  defaultProjectId: string | null;
}

const CACHE_TTL_MS = 30_000;
const CACHE_MAX_ENTRIES = 10_000;

class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  get(key: string): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.expires < Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return hit.value;
  }
  set(key: string, value: V, ttlMs = CACHE_TTL_MS): void {
    if (this.entries.size >= CACHE_MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { value, expires: Date.now() + Math.min(ttlMs, CACHE_TTL_MS) });
  }
  deleteWhere(predicate: (value: V) => boolean): void {
    for (const [key, entry] of this.entries) if (predicate(entry.value)) this.entries.delete(key);
  }
  clear(): void {
    this.entries.clear();
  }
}

// Claims are written to the users table, so they must be text Postgres can store.
const sessionClaims = z.object({
  sub: storableText(z.string().min(1).max(255)),
  tenant_id: z.guid(),
  /** Used only when the person is first seen without an invitation; afterwards the stored role wins. */
  role: z.enum(['owner', 'member', 'viewer']),
  email: storableText(z.string().max(320)).optional(),
  // Some IdPs send it as a string; anything else means "not said".
  email_verified: z.unknown().transform((v) => (v === true || v === 'true' ? true : v === false || v === 'false' ? false : undefined)).optional(),
  given_name: storableText(z.string().max(200)).optional(),
  family_name: storableText(z.string().max(200)).optional(),
});
export type SessionClaims = z.infer<typeof sessionClaims>;

/** Who a verified session signs in as, from the tenant's membership (not from the token's role claim). */
export interface SessionMember {
  userId: string;
  role: Role;
  plan: PlanName;
}

/** The membership behind session tokens (the members module); refusals are AppErrors (401, 402). */
export interface SessionMembers {
  signIn(claims: SessionClaims): Promise<SessionMember>;
}

const unauthorized = (message: string) => new AppError(401, 'unauthorized', message);

interface KeyRow {
  id: string;
  tenant_id: string;
  project_id: string;
  scopes: string[];
  revoked_at: Date | null;
  plan: PlanName;
}

export class Authenticator {
  private readonly keyCache = new TtlCache<AuthContext | null>();
  private readonly sessionCache = new TtlCache<AuthContext>();
  private readonly lastUsedWritten = new TtlCache<true>();
  private readonly jwtKey: Uint8Array | JWTVerifyGetKey | undefined;
  private members: SessionMembers | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly auth: Config['auth'],
  ) {
    if (auth.jwksUrl) this.jwtKey = createRemoteJWKSet(new URL(auth.jwksUrl));
    else if (auth.jwtSecret) this.jwtKey = new TextEncoder().encode(auth.jwtSecret);
  }

  async authenticate(authorization: string | undefined): Promise<AuthContext> {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!match?.[1]) throw unauthorized('missing bearer token');
    const token = match[1];
    return token.startsWith(API_KEY_PREFIX) ? this.fromApiKey(token) : this.fromSession(token);
  }

  /** Drops cached lookups of a key in this process; other processes follow within the cache TTL. */
  forgetApiKey(apiKeyId: string): void {
    this.keyCache.deleteWhere((ctx) => ctx?.apiKeyId === apiKeyId);
  }

  /** Drops cached plan/role data of a tenant (plan changes, user changes). */
  forgetTenant(tenantId: string): void {
    this.keyCache.deleteWhere((ctx) => ctx?.tenantId === tenantId);
    this.sessionCache.deleteWhere((ctx) => ctx.tenantId === tenantId);
  }

  /** Drops cached sessions of a user (role change, removal); other processes follow within the cache TTL. */
  forgetUser(userId: string): void {
    this.sessionCache.deleteWhere((ctx) => ctx.userId === userId);
  }

  /**
   * The membership that session sign-ins go through. Bound by the composition root (services.ts):
   * the members module's service itself needs this authenticator to forget changed sessions.
   */
  useMembers(members: SessionMembers): void {
    this.members = members;
  }

  private async fromApiKey(token: string): Promise<AuthContext> {
    const hash = sha256(token);
    const cacheKey = hash.toString('base64');
    let ctx = this.keyCache.get(cacheKey);
    if (ctx === undefined) {
      const [row] = await observeStoreCall(
        'postgres',
        'auth.api_key',
        () => this.sql<KeyRow[]>`
          select k.id, k.tenant_id, k.project_id, k.scopes, k.revoked_at, t.plan
          from api_keys k join tenants t on t.id = k.tenant_id
          where k.key_hash = ${hash}`,
      );
      ctx =
        row && !row.revoked_at
          ? {
              tenantId: row.tenant_id,
              plan: row.plan,
              tokenKind: 'apikey',
              role: 'member',
              userId: null,
              apiKeyId: row.id,
              scopes: row.scopes,
              defaultProjectId: row.project_id,
            }
          : null;
      this.keyCache.set(cacheKey, ctx);
    }
    if (!ctx) throw unauthorized('invalid or revoked API key');
    this.touchLastUsed(ctx.apiKeyId!);
    return ctx;
  }

  /** last_used_at is written at most once per cache lifetime (30 s) per key and process: never a write per request. */
  private touchLastUsed(apiKeyId: string): void {
    if (this.lastUsedWritten.get(apiKeyId)) return;
    this.lastUsedWritten.set(apiKeyId, true);
    this.sql`update api_keys set last_used_at = now() where id = ${apiKeyId}`.catch(() => {});
  }

  private async fromSession(token: string): Promise<AuthContext> {
    if (!this.jwtKey) throw unauthorized('session tokens are not configured');
    const cached = this.sessionCache.get(token);
    if (cached) return cached;
    let payload: { exp?: number };
    try {
      const verified = await jwtVerify(token, this.jwtKey as Uint8Array, {
        issuer: this.auth.issuer,
        audience: this.auth.audience,
        algorithms: this.auth.jwksUrl ? ['RS256', 'ES256', 'EdDSA'] : ['HS256'],
        requiredClaims: ['exp'],
      });
      payload = verified.payload;
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw unauthorized('session token expired');
      throw unauthorized('invalid session token');
    }
    const claims = sessionClaims.safeParse(payload);
    if (!claims.success) throw unauthorized('session token lacks required claims');
    if (!this.members) throw unauthorized('session tokens are not configured');
    const c = claims.data;
    const member = await this.members.signIn(c);
    const ctx: AuthContext = {
      tenantId: c.tenant_id,
      plan: member.plan,
      tokenKind: 'session',
      role: member.role,
      userId: member.userId,
      apiKeyId: null,
      scopes: [],
      defaultProjectId: null,
    };
    // At most 30 s (TtlCache caps every entry), as for API keys: a role change or removal reaches
    // every replica within that bound. Never past the token's own expiry.
    this.sessionCache.set(token, ctx, Math.min(CACHE_TTL_MS, (payload.exp ?? 0) * 1000 - Date.now()));
    return ctx;
  }
}

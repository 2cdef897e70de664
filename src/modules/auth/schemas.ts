import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { PLAN_NAMES } from '../../platform/plans.js';
import { isoDate } from '../../platform/schemas.js';

export const authConfig = z
  .object({
    oidc: z
      .object({
        issuer: z.string().describe('AUTH_OIDC_ISSUER: the discovery document is at {issuer}/.well-known/openid-configuration'),
        client_id: z.string(),
        scopes: z.string().describe('space-separated, asked for at sign-in'),
      })
      .nullable()
      .describe('OpenID Connect sign-in (authorization code + PKCE); null when the operator configured none'),
    dev_sign_in: z.boolean().describe('whether POST /auth/dev-session mints development sessions here'),
  })
  .describe('AuthConfig');

export const devTenantsQuery = z.object(pageQuery);

export const devTenantList = z
  .object({
    tenants: z.array(z.object({ id: z.guid(), name: z.string(), plan: z.enum(PLAN_NAMES) })),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
  })
  .describe('DevTenantList');

export const devSessionBody = z.object({
  tenant_id: z.guid(),
  role: z.enum(['owner', 'member', 'viewer']).describe('taken when this development user (subject dev-<role>) is first seen; afterwards the stored role wins'),
  email: z.email().max(320).optional(),
});
export type DevSessionRequest = z.infer<typeof devSessionBody>;

export const devSession = z
  .object({
    token: z.string().describe('HS256 session token: send it as Authorization: Bearer'),
    expires_at: isoDate,
  })
  .describe('DevSession');

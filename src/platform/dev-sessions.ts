import { SignJWT } from 'jose';
import type { Config } from '../config.js';
import type { Role } from './auth.js';

export interface DevSessionClaims {
  tenantId: string;
  role: Role;
  sub: string;
  email?: string | undefined;
}

/**
 * An HS256 session token signed with the development secret, carrying the claims the
 * Authenticator reads (and the configured iss/aud). Shared by `looptrace sessions mint` and the
 * dashboard's development sign-in; real sessions come from the identity provider.
 */
export async function mintDevSession(auth: Config['auth'], claims: DevSessionClaims, ttl: string | number): Promise<string> {
  if (!auth.jwtSecret) throw new Error('no session secret configured');
  let jwt = new SignJWT({ tenant_id: claims.tenantId, role: claims.role, ...(claims.email ? { email: claims.email } : {}) })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(claims.sub)
    .setIssuedAt()
    .setExpirationTime(ttl);
  if (auth.issuer) jwt = jwt.setIssuer(auth.issuer);
  if (auth.audience) jwt = jwt.setAudience(auth.audience);
  return jwt.sign(new TextEncoder().encode(auth.jwtSecret));
}

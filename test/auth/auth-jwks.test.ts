import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTenant, startApp, type TestContext } from '../helpers/app.js';

// A real identity provider stand-in: JWKS served over loopback HTTP, tokens signed with RS256.
let jwksServer: Server;
let signingKey: CryptoKey;
let ctx: TestContext;
const ISSUER = 'https://idp.example.test/';
const AUDIENCE = 'looptrace-dashboard';

beforeAll(async () => {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  signingKey = privateKey;
  const jwk = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  jwksServer = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  const { port } = jwksServer.address() as AddressInfo;
  ctx = await startApp({ AUTH_JWKS_URL: `http://127.0.0.1:${port}/.well-known/jwks.json`, AUTH_ISSUER: ISSUER, AUTH_AUDIENCE: AUDIENCE });
});
afterAll(async () => {
  await ctx?.close();
  jwksServer?.close();
});

function token(tenantId: string, overrides: { issuer?: string; audience?: string } = {}) {
  return new SignJWT({ tenant_id: tenantId, role: 'owner', email: 'idp@example.test' })
    .setProtectedHeader({ alg: 'RS256', kid: 'test-key' })
    .setSubject('idp-user-1')
    .setIssuer(overrides.issuer ?? ISSUER)
    .setAudience(overrides.audience ?? AUDIENCE)
    .setExpirationTime('10m')
    .sign(signingKey);
}

describe('session tokens verified against a JWKS endpoint', () => {
  it('accepts an RS256 token from the identity provider and upserts the user', async () => {
    const t = await createTenant(ctx.app);
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(await token(t.tenantId)) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().user).toMatchObject({ email: 'idp@example.test', role: 'owner' });
  });

  it('refuses a wrong issuer, a wrong audience and an HS256 token', async () => {
    const t = await createTenant(ctx.app);
    for (const bad of [await token(t.tenantId, { issuer: 'https://evil.test/' }), await token(t.tenantId, { audience: 'other' })]) {
      expect((await ctx.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(bad) })).statusCode).toBe(401);
    }
    const hs = await new SignJWT({ tenant_id: t.tenantId, role: 'owner' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('x')
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('10m')
      .sign(new TextEncoder().encode(process.env.AUTH_JWT_SECRET!));
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(hs) })).statusCode).toBe(401);
  });
});

import type { Server } from 'node:http';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

export interface OidcAccount {
  tenant_id: string;
  role: 'owner' | 'member' | 'viewer';
  email: string;
}

export interface LocalOidcProvider {
  issuer: string;
  jwksUrl: string;
  close(): Promise<void>;
}

/**
 * A real OpenID Connect provider (oidc-provider) on loopback: authorization code with PKCE for one
 * public client, ID tokens (RS256) carrying tenant_id and role, its JWKS at /jwks. Its development
 * login form signs in any account id listed in `accounts`, with any password.
 */
export async function startOidcProvider(options: {
  port: number;
  clientId: string;
  redirectUri: string;
  accounts: Record<string, OidcAccount>;
}): Promise<LocalOidcProvider> {
  const issuer = `http://127.0.0.1:${options.port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: options.clientId,
        token_endpoint_auth_method: 'none',
        redirect_uris: [options.redirectUri],
        post_logout_redirect_uris: [new URL('/sign-in', options.redirectUri).toString()],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [signingKey] },
    // Looptrace reads its claims from the ID token: release them there, not only at userinfo.
    conformIdTokenClaims: false,
    claims: { openid: ['sub', 'tenant_id', 'role'], email: ['email', 'email_verified'] },
    // A public client of a single-page app: PKCE is the proof that the code is ours.
    pkce: { required: () => true },
    clientBasedCORS: () => true,
    cookies: { keys: ['looptrace-test-cookie-key'] },
    findAccount: (_ctx, id) => {
      const account = options.accounts[id];
      if (!account) return undefined;
      return { accountId: id, claims: () => ({ sub: id, email_verified: true, ...account }) };
    },
  });
  const server: Server = provider.listen(options.port);
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

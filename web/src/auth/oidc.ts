import type { Ok } from '../api/client';
import { safeNext, type Session } from './session';

export type OidcConfig = NonNullable<Ok<'/auth/config'>['oidc']>;

// oidc-client-ts is loaded only on the way in and out of the identity provider, not with every page.
async function userManager(config: OidcConfig) {
  const { UserManager, WebStorageStateStore } = await import('oidc-client-ts');
  return new UserManager({
    authority: config.issuer,
    client_id: config.client_id,
    redirect_uri: `${window.location.origin}/auth/callback`,
    response_type: 'code', // authorization code; oidc-client-ts always adds PKCE (S256)
    scope: config.scopes,
    loadUserInfo: false,
    userStore: new WebStorageStateStore({ store: window.sessionStorage }),
  });
}

/** Off to the identity provider; it sends the browser back to /auth/callback. */
export async function startOidcSignIn(config: OidcConfig, next: string): Promise<void> {
  await (await userManager(config)).signinRedirect({ state: { next } });
}

/**
 * Completes the code exchange. The ID token is the session token: every OpenID Connect provider
 * issues it as a signed JWT carrying the user's claims (tenant_id, role), and the API verifies it
 * against the provider's JWKS (docs/dashboard.md).
 */
export async function finishOidcSignIn(config: OidcConfig): Promise<{ session: Session; next: string }> {
  const manager = await userManager(config);
  const user = await manager.signinRedirectCallback();
  await manager.removeUser(); // the session below is all the dashboard keeps
  if (!user.id_token || !user.profile.exp) throw new Error('the identity provider returned no ID token');
  const next = safeNext((user.state as { next?: string } | undefined)?.next);
  return { session: { token: user.id_token, via: 'oidc', expiresAt: user.profile.exp * 1000 }, next };
}

/**
 * Ends the session at the identity provider too (RP-initiated logout), so that the next sign-in on
 * this browser asks for the account again; the provider sends the browser back to /sign-in.
 * False when the provider has no end_session_endpoint: then only this browser forgets the session.
 */
export async function endProviderSession(config: OidcConfig, idToken: string): Promise<boolean> {
  const manager = await userManager(config);
  if (!(await manager.metadataService.getEndSessionEndpoint())) return false;
  await manager.signoutRedirect({ id_token_hint: idToken, post_logout_redirect_uri: `${window.location.origin}/sign-in` });
  return true;
}

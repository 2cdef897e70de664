import { api, unwrap } from '../api/client';
import { endProviderSession } from './oidc';
import { session } from './session';

/**
 * Forgets the session in this browser (every tab) and, for a single sign-on session, ends it at the
 * identity provider as well. A provider that cannot be reached leaves the local sign-out done.
 */
export async function signOut(notice: string | null): Promise<void> {
  const current = session.current();
  const oidc = current?.via === 'oidc' ? await unwrap(api.GET('/auth/config')).then((c) => c.oidc, () => null) : null;
  session.end(notice);
  if (oidc && current) await endProviderSession(oidc, current.token).catch(() => false);
}

import { Navigate, useLocation } from 'react-router';
import { api, unwrap } from '../api/client';
import { useApi } from '../api/useApi';
import { useSessionState } from '../auth/session';
import { signOut } from '../auth/signOut';
import { ErrorNotice } from '../ui/ErrorNotice';
import { Layout } from './Layout';
import { MeContext } from './MeContext';

/** Every page behind sign-in: a session, then who it is (GET /v1/me), then the app shell. */
export function SignedIn() {
  const location = useLocation();
  const { session: current } = useSessionState();
  if (!current || current.expiresAt <= Date.now()) {
    const next = encodeURIComponent(location.pathname + location.search);
    return <Navigate to={`/sign-in?next=${next}`} replace />;
  }
  return <WhoIsSignedIn token={current.token} />;
}

/**
 * GET /v1/me, asked only with a session: asked without one, it was a 401 that Chromium logs as a
 * console error on the way to the sign-in page.
 */
function WhoIsSignedIn({ token }: { token: string }) {
  const me = useApi(`me:${token}`, (signal) => unwrap(api.GET('/v1/me', { signal })));
  if (me.error !== undefined) {
    // The API refused the session itself (a plan without a free seat, a removed membership): say so, offer a way out.
    return (
      <main className="sign-in">
        <h1>Signed in, but the API refuses this session</h1>
        <ErrorNotice error={me.error} />
        <button type="button" onClick={() => void signOut(null)}>
          Sign out
        </button>
      </main>
    );
  }
  if (!me.data) {
    return (
      <main className="sign-in" aria-busy="true">
        <h1>Loading…</h1>
      </main>
    );
  }
  return (
    <MeContext.Provider value={me.data}>
      <Layout />
    </MeContext.Provider>
  );
}

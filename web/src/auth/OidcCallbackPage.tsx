import { useEffect, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, unwrap } from '../api/client';
import { ErrorNotice } from '../ui/ErrorNotice';
import { finishOidcSignIn } from './oidc';
import { session } from './session';

// One exchange per return from the provider, even if the effect runs twice (React's strict mode).
let exchange: { search: string; done: Promise<string> } | undefined;

async function completeSignIn(): Promise<string> {
  const config = await unwrap(api.GET('/auth/config'));
  if (!config.oidc) throw new Error('single sign-on is not configured on this server');
  const { session: signedIn, next } = await finishOidcSignIn(config.oidc);
  session.start(signedIn);
  return next;
}

export function OidcCallbackPage() {
  const navigate = useNavigate();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    if (exchange?.search !== window.location.search) exchange = { search: window.location.search, done: completeSignIn() };
    exchange.done.then((next) => navigate(next, { replace: true }), setError);
  }, [navigate]);
  return (
    <main className="sign-in">
      <h1>Signing in…</h1>
      {error !== undefined && (
        <>
          <ErrorNotice error={error} />
          <p>
            <Link to="/sign-in">Back to sign-in</Link>
          </p>
        </>
      )}
    </main>
  );
}

import { useState, type FormEvent } from 'react';
import { Navigate, useNavigate, useSearchParams } from 'react-router';
import { api, unwrap, type Role } from '../api/client';
import { planName } from '../api/permissions';
import { useApi } from '../api/useApi';
import { ErrorNotice } from '../ui/ErrorNotice';
import { startOidcSignIn, type OidcConfig } from './oidc';
import { safeNext, session, useSessionState } from './session';

const ROLES: Record<Role, string> = { owner: 'Owner', member: 'Member', viewer: 'Viewer' };

export function SignInPage() {
  const { session: current, notice } = useSessionState();
  const [params] = useSearchParams();
  const next = safeNext(params.get('next'));
  const config = useApi('auth-config', (signal) => unwrap(api.GET('/auth/config', { signal })));
  if (current) return <Navigate to={next} replace />;
  return (
    <main className="sign-in">
      <h1>Sign in to Looptrace</h1>
      {notice && (
        <p role="status" className="notice">
          {notice}
        </p>
      )}
      {config.error !== undefined && <ErrorNotice error={config.error} />}
      {config.data?.oidc && <OidcSignIn config={config.data.oidc} next={next} />}
      {config.data?.dev_sign_in && <DevSignIn next={next} />}
      {config.data && !config.data.oidc && !config.data.dev_sign_in && (
        <p>
          No sign-in is configured on this server: the operator sets <code>AUTH_OIDC_ISSUER</code> and <code>AUTH_OIDC_CLIENT_ID</code>.
        </p>
      )}
    </main>
  );
}

function OidcSignIn({ config, next }: { config: OidcConfig; next: string }) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const go = () => {
    setBusy(true);
    startOidcSignIn(config, next).catch((err: unknown) => {
      setError(err);
      setBusy(false);
    });
  };
  return (
    <section className="card" aria-labelledby="oidc-title">
      <h2 id="oidc-title">Your organization&rsquo;s account</h2>
      <p>Signs in at {new URL(config.issuer).host}.</p>
      <button type="button" className="primary" onClick={go} disabled={busy}>
        Sign in with single sign-on
      </button>
      {error !== undefined && <ErrorNotice error={error} />}
    </section>
  );
}

function DevSignIn({ next }: { next: string }) {
  const navigate = useNavigate();
  const tenants = useApi('dev-tenants', (signal) => unwrap(api.GET('/auth/dev-tenants', { params: { query: { limit: 100 } }, signal })));
  const [error, setError] = useState<unknown>();
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const body = { tenant_id: String(form.get('tenant')), role: String(form.get('role')) as Role };
    try {
      const minted = await unwrap(api.POST('/auth/dev-session', { body }));
      session.start({ token: minted.token, via: 'dev', expiresAt: Date.parse(minted.expires_at) });
      navigate(next, { replace: true });
    } catch (err) {
      setError(err);
    }
  };
  const list = tenants.data?.tenants ?? [];
  return (
    <section className="card" aria-labelledby="dev-title">
      <h2 id="dev-title">Development sign-in</h2>
      <p>Outside production: any tenant, any role, signed with the server&rsquo;s development secret.</p>
      {tenants.error !== undefined && <ErrorNotice error={tenants.error} />}
      {tenants.data && list.length === 0 && (
        <p>
          No tenant yet. Create one: <code>npx looptrace tenants create --name Acme --plan pro</code>, then reload.
        </p>
      )}
      {list.length > 0 && (
        <form onSubmit={submit} className="stack">
          <label>
            Tenant
            <select name="tenant" required>
              {list.map((t) => (
                <option key={t.id} value={t.id}>
                  {t.name} ({planName(t.plan)}) · {t.id.slice(0, 8)}
                </option>
              ))}
            </select>
          </label>
          {tenants.data?.has_more && <p className="hint">The newest 100 tenants.</p>}
          <label>
            Role
            <select name="role" defaultValue="owner">
              {Object.entries(ROLES).map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" className="primary">
            Sign in for development
          </button>
        </form>
      )}
      {error !== undefined && <ErrorNotice error={error} />}
    </section>
  );
}

import { NavLink } from 'react-router';
import { AdminNav } from '../admin/AdminNav';
import { planName } from '../api/permissions';
import { signOut } from '../auth/signOut';
import { GatedNavItems, type GatedPage } from './GatedNav';
import { useMe } from './MeContext';
import { PageOutlet } from './PageBoundary';

/** Built pages behind a plan or role: a link when allowed, otherwise listed disabled with the reason. */
const GATED_PAGES: GatedPage[] = [
  { label: 'Sessions', to: '/sessions', operation: 'GET /v1/sessions' },
  { label: 'Metrics', to: '/metrics', operation: 'GET /v1/metrics' },
  { label: 'SQL', to: '/sql', operation: 'POST /v1/sql' },
  { label: 'Failures', to: '/failures', operation: 'GET /v1/failures/clusters' },
  { label: 'Evaluations', to: '/evals', operation: 'GET /v1/eval-rules' },
  { label: 'Datasets', to: '/datasets', operation: 'GET /v1/datasets' },
  { label: 'Control loop', to: '/control/actions', operation: 'GET /v1/control/actions' },
  { label: 'Prompt deployments', to: '/prompt-deployments', operation: 'GET /v1/prompts/deployments' },
];

export function Layout() {
  const me = useMe();
  return (
    <div className="app">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <span className="brand">Looptrace</span>
        <span className="tenant">
          {me.tenant.name} · {planName(me.tenant.plan)} plan
        </span>
        <span className="user">
          {me.user.email ?? 'Signed in'} · {me.user.role}
        </span>
        <button type="button" onClick={() => void signOut('Signed out.')}>
          Sign out
        </button>
      </header>
      <nav aria-label="Dashboard" className="sidebar">
        <ul>
          <li>
            <NavLink to="/traces">Traces</NavLink>
          </li>
          <GatedNavItems pages={GATED_PAGES} />
        </ul>
        <AdminNav />
      </nav>
      <main id="main" className="content">
        <PageOutlet />
      </main>
    </div>
  );
}

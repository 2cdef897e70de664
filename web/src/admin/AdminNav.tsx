import { GatedNavItems, type GatedPage } from '../shell/GatedNav';

/** The Administration pages, each with the operation that shows it: a link, or disabled with the reason. */
const ADMIN_PAGES: GatedPage[] = [
  { label: 'Projects', to: '/admin/projects', operation: 'GET /v1/projects' },
  { label: 'API keys', to: '/admin/api-keys', operation: 'GET /v1/apikeys' },
  { label: 'Members and seats', to: '/admin/members', operation: 'GET /v1/members' },
  { label: 'Billing and usage', to: '/admin/billing', operation: 'GET /v1/billing' },
  { label: 'Audit log', to: '/admin/audit-log', operation: 'GET /v1/audit-log' },
  { label: 'Webhooks', to: '/admin/webhooks', operation: 'GET /v1/webhooks' },
  { label: 'LLM connections', to: '/admin/llm-connections', operation: 'GET /v1/llm-connections' },
];

export function AdminNav() {
  return (
    <>
      <p id="nav-admin" className="nav-heading">
        Administration
      </p>
      <ul aria-labelledby="nav-admin">
        <GatedNavItems pages={ADMIN_PAGES} />
      </ul>
    </>
  );
}

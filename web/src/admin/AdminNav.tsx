import { NavLink } from 'react-router';
import type { Operation } from '../api/access';
import { can } from '../api/permissions';
import { useMe } from '../shell/MeContext';

/** The Administration pages, each with the operation that shows it: a link, or disabled with the reason. */
export const ADMIN_PAGES: { label: string; to: string; operation: Operation }[] = [
  { label: 'Projects', to: '/admin/projects', operation: 'GET /v1/projects' },
  { label: 'API keys', to: '/admin/api-keys', operation: 'GET /v1/apikeys' },
  { label: 'Members and seats', to: '/admin/members', operation: 'GET /v1/members' },
  { label: 'Billing and usage', to: '/admin/billing', operation: 'GET /v1/billing' },
  { label: 'Audit log', to: '/admin/audit-log', operation: 'GET /v1/audit-log' },
  { label: 'Webhooks', to: '/admin/webhooks', operation: 'GET /v1/webhooks' },
  { label: 'LLM connections', to: '/admin/llm-connections', operation: 'GET /v1/llm-connections' },
];

export function AdminNav() {
  const me = useMe();
  return (
    <>
      <p id="nav-admin" className="nav-heading">
        Administration
      </p>
      <ul aria-labelledby="nav-admin">
        {ADMIN_PAGES.map(({ label, to, operation }) => {
          const permission = can(me, operation);
          return (
            <li key={to}>
              {permission.allowed ? (
                <NavLink to={to}>{label}</NavLink>
              ) : (
                <span className="nav-disabled" aria-disabled="true">
                  {label}
                  <small>{permission.reason}</small>
                </span>
              )}
            </li>
          );
        })}
      </ul>
    </>
  );
}

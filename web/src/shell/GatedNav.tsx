import { NavLink } from 'react-router';
import type { Operation } from '../api/access';
import { can } from '../api/permissions';
import { useMe } from './MeContext';

/** A page of the navigation and the operation that shows it (its `x-access` decides). */
export interface GatedPage {
  label: string;
  to: string;
  operation: Operation;
}

/** Navigation items of pages behind a plan or role: a link when allowed, otherwise listed disabled with the reason. */
export function GatedNavItems({ pages }: { pages: GatedPage[] }) {
  const me = useMe();
  return (
    <>
      {pages.map(({ label, to, operation }) => {
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
    </>
  );
}

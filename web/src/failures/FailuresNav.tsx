import { NavLink } from 'react-router';

/** The failure pages: clusters and the rules that feed them. */
export function FailuresNav() {
  return (
    <nav aria-label="Failures" className="tabs">
      <NavLink to="/failures" end>
        Clusters
      </NavLink>
      <NavLink to="/failures/rules">Rules</NavLink>
    </nav>
  );
}

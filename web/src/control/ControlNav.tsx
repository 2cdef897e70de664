import { NavLink } from 'react-router';

/** The control loop's own pages. */
export function ControlNav() {
  return (
    <nav aria-label="Control loop" className="tabs">
      <NavLink to="/control/actions">Actions</NavLink>
      <NavLink to="/control/policies">Policies</NavLink>
      <NavLink to="/control/model-routes">Model routes</NavLink>
    </nav>
  );
}

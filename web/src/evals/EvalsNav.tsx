import { NavLink } from 'react-router';

/** The evaluation pages. */
export function EvalsNav() {
  return (
    <nav aria-label="Evaluations" className="tabs">
      <NavLink to="/evals/rules">Eval rules</NavLink>
      <NavLink to="/evals/results">Evaluations</NavLink>
      <NavLink to="/evals/compare">Compare windows</NavLink>
    </nav>
  );
}

import { Component, Suspense, type ReactNode } from 'react';
import { Outlet, useLocation } from 'react-router';

interface State {
  failed: boolean;
}

/**
 * A page that throws while rendering, or whose code chunk cannot be fetched (a release replaced the
 * hashed files while this tab stayed open), shows why with a way out, instead of a blank shell.
 */
class Boundary extends Component<{ children: ReactNode }, State> {
  state: State = { failed: false };

  static getDerivedStateFromError(): State {
    return { failed: true };
  }

  render() {
    if (!this.state.failed) return this.props.children;
    return (
      <div role="alert" className="notice notice-error">
        <p>This page could not be shown: its code did not load, or it failed while drawing.</p>
        <button type="button" onClick={() => window.location.reload()}>
          Reload the page
        </button>
      </div>
    );
  }
}

/** The page of the current route: its chunk loading, then the page, a failure kept to this page. */
export function PageOutlet() {
  // A new route is a new boundary: leaving a failed page clears the failure.
  const { pathname } = useLocation();
  return (
    <Boundary key={pathname}>
      <Suspense fallback={<p aria-live="polite">Loading the page…</p>}>
        <Outlet />
      </Suspense>
    </Boundary>
  );
}

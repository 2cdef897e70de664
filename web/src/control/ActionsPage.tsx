import { ListState, LoadMore } from '../ui/lists';
import { useEffect } from 'react';
import { Link } from 'react-router';
import { api, unwrap, type Ok } from '../api/client';
import { formatTime } from '../traces/format';
import { ControlNav } from './ControlNav';
import { usePages } from '../api/usePages';

export type ActionList = Ok<'/v1/control/actions'>;
export type Action = ActionList['actions'][number];

export const ACTION_STATES: Record<Action['status'], string> = {
  pending: 'Pending',
  pending_approval: 'Awaiting approval',
  approved: 'Approved',
  running: 'Running',
  executed: 'Executed',
  failed: 'Failed',
  rejected: 'Rejected',
};
export const ACTION_TYPES: Record<Action['type'], string> = {
  retry: 'Retry',
  fallback_model: 'Fallback model',
  prompt_modification: 'Prompt modification',
  escalate: 'Escalation',
};

const listActions = (status: Action['status'] | undefined) => (cursor: string | undefined, signal?: AbortSignal) =>
  unwrap(api.GET('/v1/control/actions', { params: { query: { limit: 50, status, cursor } }, signal }));

export function ActionsPage() {
  const queue = usePages('actions?pending_approval', listActions('pending_approval'), (p: ActionList) => p.actions);
  const all = usePages('actions', listActions(undefined), (p: ActionList) => p.actions);
  useEffect(() => {
    document.title = 'Control actions · Looptrace';
  }, []);

  return (
    <>
      <h1>Control loop</h1>
      <ControlNav />
      <section aria-labelledby="queue-title">
        <h2 id="queue-title">Awaiting approval</h2>
        <ActionSection list={queue} empty="Nothing waits for an owner." caption="Actions awaiting an owner's approval, newest first" />
      </section>
      <section aria-labelledby="all-title">
        <h2 id="all-title">All actions</h2>
        <ActionSection list={all} empty="No control actions yet: policies start them when traces fail." caption="Control actions, newest first" />
      </section>
    </>
  );
}

function ActionSection({ list, empty, caption }: { list: ReturnType<typeof usePages<ActionList, Action>>; empty: string; caption: string }) {
  return (
    <>
      <ListState list={list} loading="Loading…" empty={<p className="muted">{empty}</p>} />
      {list.items.length > 0 && <ActionTable actions={list.items} caption={caption} />}
      <LoadMore list={list} />
    </>
  );
}

/** Control actions as a table; `showTrace: false` where they are all of one trace (the trace's own page). */
export function ActionTable({ actions, caption, showTrace = true }: { actions: Action[]; caption: string; showTrace?: boolean }) {
  return (
    <table className="list">
      <caption className="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Created</th>
          <th scope="col">Type</th>
          <th scope="col">State</th>
          {showTrace && <th scope="col">Trace</th>}
          <th scope="col">Model</th>
          <th scope="col">Error</th>
        </tr>
      </thead>
      <tbody>
        {actions.map((a) => (
          <tr key={a.id}>
            <td>
              <Link to={`/control/actions/${a.id}`}>{formatTime(a.created_at)}</Link>
            </td>
            <td>
              {ACTION_TYPES[a.type]}
              {a.escalation_reason && <span className="muted"> ({a.escalation_reason})</span>}
            </td>
            <td>
              <span className={`badge action-${a.status}`}>{ACTION_STATES[a.status]}</span>
            </td>
            {showTrace && (
              <td>
                <Link to={`/traces/${a.trace_id}`}>
                  <code>{a.trace_id.slice(0, 8)}</code>
                  <span className="visually-hidden"> (trace {a.trace_id})</span>
                </Link>
              </td>
            )}
            <td>{a.model ?? '—'}</td>
            <td>{a.error ?? ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

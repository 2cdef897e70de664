import { Link } from 'react-router';
import { api, unwrap } from '../../api/client';
import { useApi } from '../../api/useApi';
import { usePages } from '../../api/usePages';
import { ActionTable } from '../../control/ActionsPage';
import { clusterTypeLabel } from '../../failures/clusters';
import { ErrorNotice } from '../../ui/ErrorNotice';
import { ListState, LoadMore } from '../../ui/lists';
import { Reason, usePermission } from '../../ui/permission';
import { failureTypeLabel } from '../filters';
import { formatCount } from '../format';

/** An error and failure types, of a trace or of a span. */
export function Problems({ error, failureTypes }: { error: string | null; failureTypes: string[] }) {
  if (error === null && failureTypes.length === 0) return null;
  return (
    <div className="notice notice-error">
      {error !== null && (
        <p>
          <strong>Error:</strong> {error}
        </p>
      )}
      {failureTypes.length > 0 && (
        <p>
          <strong>{failureTypes.length === 1 ? 'Failure type:' : 'Failure types:'}</strong>{' '}
          {failureTypes.map((type) => (
            <span key={type} className="badge failure">
              {failureTypeLabel(type)}
            </span>
          ))}
        </p>
      )}
    </div>
  );
}

/** The failure clusters a span of this trace was counted in, each a link to the cluster. */
export function TraceClusters({ traceId }: { traceId: string }) {
  const clusters = useApi(`trace-clusters:${traceId}`, (signal) =>
    unwrap(api.GET('/v1/failures/clusters', { params: { query: { trace_id: traceId, limit: 100 } }, signal })),
  );
  return (
    <section aria-labelledby="clusters-title">
      <h2 id="clusters-title">Failure clusters</h2>
      {clusters.error !== undefined && <ErrorNotice error={clusters.error} />}
      {clusters.loading && <p aria-live="polite">Loading the failure clusters…</p>}
      {clusters.data?.clusters.length === 0 && <p className="muted">No span of this trace is in a failure cluster.</p>}
      <ul className="trace-clusters">
        {clusters.data?.clusters.map((cluster) => (
          <li key={cluster.id}>
            <Link to={`/failures/clusters/${cluster.id}`}>{clusterTypeLabel(cluster.type)}</Link>{' '}
            <span className="muted">
              ({formatCount(cluster.trace_count)} {cluster.trace_count === 1 ? 'trace' : 'traces'})
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** The control loop's actions on this trace (retries, fallbacks, escalations), newest first. */
export function TraceActions({ traceId }: { traceId: string }) {
  const allowed = usePermission('GET /v1/control/actions');
  return (
    <section aria-labelledby="actions-title">
      <h2 id="actions-title">Control actions</h2>
      {allowed.allowed ? <ActionList traceId={traceId} /> : <Reason id="actions-reason" permission={allowed} what="The control loop's actions" />}
    </section>
  );
}

function ActionList({ traceId }: { traceId: string }) {
  const list = usePages(
    `trace-actions:${traceId}`,
    (cursor, signal) => unwrap(api.GET('/v1/control/actions', { params: { query: { trace_id: traceId, limit: 50, cursor } }, signal })),
    (page) => page.actions,
  );
  return (
    <>
      <ListState list={list} loading="Loading the control actions…" empty={<p className="muted">No control action on this trace.</p>} />
      {list.items.length > 0 && <ActionTable actions={list.items} caption="Control actions on this trace, newest first" showTrace={false} />}
      <LoadMore list={list} label="Load more control actions" />
    </>
  );
}

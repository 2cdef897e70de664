import { ListState, LoadMore } from '../ui/lists';
import { useEffect } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, unwrap, type Ok } from '../api/client';
import { formatTime } from '../traces/format';
import { formatRate } from './format';
import { usePages } from '../api/usePages';

export type DeploymentList = Ok<'/v1/prompts/deployments'>;
export type Deployment = DeploymentList['deployments'][number];
export type DeploymentStatus = Deployment['status'];

/** Every state of the API's deployment table (docs/control-loop.md), in the order a deployment moves. */
export const DEPLOYMENT_STATES: Record<DeploymentStatus, string> = {
  proposed: 'Proposed',
  ab_running: 'A/B test running',
  ab_passed: 'A/B test passed: awaiting approval',
  ab_failed: 'A/B test failed',
  shipped: 'Shipped',
  monitoring: 'Shipped, monitoring',
  regressed: 'Regressed',
  rolled_back: 'Rolled back',
  rejected: 'Rejected',
};

export function DeploymentState({ status }: { status: DeploymentStatus }) {
  return (
    <span className={`badge state-${status}`}>
      {DEPLOYMENT_STATES[status]} <span className="visually-hidden">({status})</span>
    </span>
  );
}

const isStatus = (s: string | null): s is DeploymentStatus => s !== null && s in DEPLOYMENT_STATES;

export function DeploymentsPage() {
  const [params, setParams] = useSearchParams();
  const raw = params.get('status');
  const status = isStatus(raw) ? raw : undefined;
  const list = usePages(
    `deployments?${status ?? ''}`,
    (cursor, signal) => unwrap(api.GET('/v1/prompts/deployments', { params: { query: { limit: 50, status, cursor } }, signal })),
    (page: DeploymentList) => page.deployments,
  );
  useEffect(() => {
    document.title = 'Prompt deployments · Looptrace';
  }, []);

  return (
    <>
      <h1>Prompt deployments</h1>
      <p className="hint">Improved prompts proposed for failure clusters, A/B tested against the current prompt before they ship.</p>
      <div className="filters-inline">
        <label>
          State
          <select value={status ?? ''} onChange={(e) => setParams(e.target.value ? { status: e.target.value } : {})}>
            <option value="">Any state</option>
            {Object.entries(DEPLOYMENT_STATES).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ListState list={list} loading="Loading deployments…" empty={<p>No prompt deployments{status ? ' in this state' : ''}.</p>} />
      {list.items.length > 0 && (
        <table className="list">
          <caption className="visually-hidden">Prompt deployments, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Prompt</th>
              <th scope="col">State</th>
              <th scope="col">Failure rate before → after</th>
              <th scope="col">Requested by</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((d) => (
              <tr key={d.id}>
                <td>
                  <Link to={`/prompt-deployments/${d.id}`}>{d.prompt_name}</Link>
                  <span className="muted"> v{d.from_version}{d.to_version !== null ? ` → v${d.to_version}` : ''}</span>
                </td>
                <td>
                  <DeploymentState status={d.status} />
                </td>
                <td>{d.ab_report ? `${formatRate(d.ab_report.failure_rate_before)} → ${formatRate(d.ab_report.failure_rate_after)}` : '—'}</td>
                <td>{d.requested_by}</td>
                <td>{formatTime(d.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={list} />
    </>
  );
}

import { DetailState } from '../ui/lists';
import { Fact } from '../ui/Fact';
import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { useApi } from '../api/useApi';
import { formatTime } from '../traces/format';
import { DecisionButton } from './Decision';
import { DEPLOYMENT_STATES, DeploymentState, type Deployment } from './DeploymentsPage';
import { deltaClass, formatDelta, formatRate, formatScore } from './format';

export function DeploymentDetailPage() {
  const { id = '' } = useParams();
  const loaded = useApi(`deployment:${id}`, (signal) => unwrap(api.GET('/v1/prompts/deployments/{id}', { params: { path: { id } }, signal })));
  // A decision answers the deployment as it now is.
  const [decided, setDecided] = useState<Deployment>();
  const deployment = decided?.id === id ? decided : loaded.data;
  useEffect(() => {
    document.title = `${deployment?.prompt_name ?? 'Prompt deployment'} · Looptrace`;
  }, [deployment?.prompt_name]);

  return (
    <>
      <p>
        <Link to="/prompt-deployments">← Prompt deployments</Link>
      </p>
      <DetailState state={loaded} title="Prompt deployment" loading="Loading the deployment…" />
      {deployment && <DeploymentView deployment={deployment} onDecided={setDecided} />}
    </>
  );
}

function DeploymentView({ deployment: d, onDecided }: { deployment: Deployment; onDecided: (d: Deployment) => void }) {
  const path = { params: { path: { id: d.id } } };
  const [reason, setReason] = useState('');
  // Which states each decision moves from is the API's transition table (x-from-states, docs/control-loop.md).
  const state = { status: d.status, label: DEPLOYMENT_STATES[d.status] };
  return (
    <>
      <h1>
        Deployment of <code>{d.prompt_name}</code>
      </h1>
      <p className="state-line" aria-live="polite">
        State: <DeploymentState status={d.status} />
      </p>
      <dl className="facts">
        <Fact term="Versions" value={`v${d.from_version}${d.to_version !== null ? ` → v${d.to_version}` : ' (not shipped)'}`} />
        <Fact term="Failure cluster" value={<code>{d.cluster_signature}</code>} />
        <Fact term="Requested by" value={d.requested_by} />
        <Fact term="Created" value={formatTime(d.created_at)} />
        {d.approved_by && <Fact term="Approved by" value={d.approved_by} />}
        {d.shipped_at && <Fact term="Shipped" value={formatTime(d.shipped_at)} />}
        {d.rolled_back_at && <Fact term="Rolled back" value={formatTime(d.rolled_back_at)} />}
        {d.monitor_baseline !== null && <Fact term="Monitoring baseline" value={formatRate(d.monitor_baseline)} />}
        {d.regression_metric !== null && <Fact term="Live pass rate" value={formatRate(d.regression_metric)} />}
        {d.rejection_reason !== null && <Fact term="Rejection reason" value={d.rejection_reason || '(none given)'} />}
      </dl>

      <section className="decisions" aria-labelledby="decisions-title">
        <h2 id="decisions-title">Decisions</h2>
        <DecisionButton
          operation="POST /v1/prompts/deployments/{id}/approve"
          label="Approve and ship"
          primary
          state={state}
          notFrom="only a deployment whose A/B test passed can be approved"
          run={async () => onDecided(await unwrap(api.POST('/v1/prompts/deployments/{id}/approve', path)))}
        />
        <DecisionButton
          operation="POST /v1/prompts/deployments/{id}/rollback"
          label="Roll back"
          state={state}
          notFrom="only a shipped deployment can be rolled back"
          run={async () => onDecided(await unwrap(api.POST('/v1/prompts/deployments/{id}/rollback', path)))}
        />
        <DecisionButton
          operation="POST /v1/prompts/deployments/{id}/reject"
          label="Reject"
          state={state}
          notFrom="a finished deployment cannot be rejected"
          run={async () => onDecided(await unwrap(api.POST('/v1/prompts/deployments/{id}/reject', { ...path, body: reason ? { reason } : {} })))}
        >
          <label>
            Reason for rejecting (optional)
            <input value={reason} maxLength={500} onChange={(e) => setReason(e.target.value)} />
          </label>
        </DecisionButton>
      </section>

      <h2>A/B report</h2>
      {d.ab_report === null ? (
        <p className="muted">No A/B report yet{d.status === 'proposed' || d.status === 'ab_running' ? ': the test has not finished' : ''}.</p>
      ) : (
        <>
          <p>
            <span className={`badge ${d.ab_report.decision === 'pass' ? 'ok' : 'error'}`}>{d.ab_report.decision === 'pass' ? 'passed' : 'failed'}</span> {d.ab_report.reason}
          </p>
          <dl className="facts">
            <Fact term="Replayed" value={`${d.ab_report.samples.failing} failing, ${d.ab_report.samples.passing} passing`} />
            <Fact term="Failure rate before" value={formatRate(d.ab_report.failure_rate_before)} />
            <Fact term="Failure rate after" value={formatRate(d.ab_report.failure_rate_after)} />
          </dl>
          {d.ab_report.metrics.length > 0 && (
            <table className="list">
              <caption>Per-metric average scores, current prompt against proposed prompt</caption>
              <thead>
                <tr>
                  <th scope="col">Metric</th>
                  <th scope="col" className="num">
                    Before
                  </th>
                  <th scope="col" className="num">
                    After
                  </th>
                  <th scope="col" className="num">
                    Delta
                  </th>
                </tr>
              </thead>
              <tbody>
                {d.ab_report.metrics.map((m) => (
                  <tr key={m.rule_id}>
                    <th scope="row">{m.metric}</th>
                    <td className="num">{formatScore(m.baseline)}</td>
                    <td className="num">{formatScore(m.candidate)}</td>
                    <td className={`num ${deltaClass(m.delta)}`}>{formatDelta(m.delta)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}

      <div className="io">
        <section className="payload" aria-labelledby="before-title">
          <h3 id="before-title">Before: v{d.from_version}, the prompt at proposal time</h3>
          <pre>{d.current_prompt}</pre>
        </section>
        <section className="payload" aria-labelledby="after-title">
          <h3 id="after-title">After: the proposed prompt</h3>
          {d.proposed_prompt === '' ? <p className="muted">not written yet</p> : <pre>{d.proposed_prompt}</pre>}
          {d.rationale && <p className="muted">Rationale: {d.rationale}</p>}
        </section>
      </div>
    </>
  );
}

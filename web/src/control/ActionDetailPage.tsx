import { DetailState } from '../ui/lists';
import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import { api, ApiError, unwrap, type Ok } from '../api/client';
import { useApi } from '../api/useApi';
import { formatCost, formatCount, formatDuration, formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { JsonBlock, Payload } from '../ui/Payload';
import { ACTION_STATES, ACTION_TYPES, type Action } from './ActionsPage';
import { ControlNav } from './ControlNav';
import { DecisionButton } from './Decision';
import { Fact } from '../ui/Fact';
import { deltaClass, formatDelta, formatScore } from './format';

type Diff = Exclude<Ok<'/v1/control/actions/{id}/diff'>, { status: 'pending' }>;

export function ActionDetailPage() {
  const { id = '' } = useParams();
  const loaded = useApi(`action:${id}`, (signal) => unwrap(api.GET('/v1/control/actions/{id}', { params: { path: { id } }, signal })));
  const [decided, setDecided] = useState<Action>();
  const action = decided?.id === id ? decided : loaded.data;
  useEffect(() => {
    document.title = 'Control action · Looptrace';
  }, []);

  return (
    <>
      <ControlNav />
      <p>
        <Link to="/control/actions">← Control actions</Link>
      </p>
      <DetailState state={loaded} title="Control action" loading="Loading the action…" />
      {action && <ActionView action={action} onDecided={setDecided} />}
    </>
  );
}

function ActionView({ action: a, onDecided }: { action: Action; onDecided: (a: Action) => void }) {
  const path = { params: { path: { id: a.id } } };
  // Which states a decision moves from is the API's (x-from-states).
  const state = { status: a.status, label: ACTION_STATES[a.status] };
  const notFrom = 'only an action awaiting approval can be decided';
  return (
    <>
      <h1>
        {ACTION_TYPES[a.type]} <span className={`badge action-${a.status}`}>{ACTION_STATES[a.status]}</span>
      </h1>
      <dl className="facts">
        <Fact term="Trace" value={<Link to={`/traces/${a.trace_id}`}>{a.trace_id}</Link>} />
        <Fact term="Policy" value={<code>{a.policy_id}</code>} />
        <Fact term="Created" value={formatTime(a.created_at)} />
        {a.escalation_reason && <Fact term="Escalation reason" value={a.escalation_reason} />}
        <Fact term="Requires approval" value={a.require_approval ? 'yes' : 'no'} />
        {a.decided_by && <Fact term="Decided by" value={`${a.decided_by}${a.decided_at ? `, ${formatTime(a.decided_at)}` : ''}`} />}
        {a.executed_at && <Fact term="Executed" value={formatTime(a.executed_at)} />}
        {a.model && <Fact term="Model" value={a.model} />}
        {a.latency_ms !== null && <Fact term="Latency" value={formatDuration(a.latency_ms)} />}
        {a.prompt_tokens !== null && <Fact term="Tokens" value={`${formatCount(a.prompt_tokens)} prompt, ${formatCount(a.completion_tokens ?? 0)} completion`} />}
        {a.cost !== null && <Fact term="Cost" value={formatCost(a.cost)} />}
      </dl>
      {a.error && (
        <div className="notice notice-error">
          <strong>Error:</strong> {a.error}
        </div>
      )}
      <section className="decisions" aria-labelledby="decisions-title">
        <h2 id="decisions-title">Decisions</h2>
        <DecisionButton
          operation="POST /v1/control/actions/{id}/approve"
          label="Approve"
          primary
          state={state}
          notFrom={notFrom}
          run={async () => onDecided(await unwrap(api.POST('/v1/control/actions/{id}/approve', path)))}
        />
        <DecisionButton
          operation="POST /v1/control/actions/{id}/reject"
          label="Reject"
          state={state}
          notFrom={notFrom}
          run={async () => onDecided(await unwrap(api.POST('/v1/control/actions/{id}/reject', path)))}
        />
      </section>
      <div className="io">
        <Payload label="Remediation input" text={a.input ?? ''} />
        <Payload label="Remediation output" text={a.output ?? ''} />
      </div>
      <JsonBlock label="Action metadata" value={a.metadata} />
      {a.type !== 'escalate' && <DiffView id={a.id} status={a.status} />}
    </>
  );
}

/** The remediated output against the original span's (GET …/diff): 202 while it or its re-scores run. */
function DiffView({ id, status }: { id: string; status: Action['status'] }) {
  const diff = useApi(`action-diff:${id}:${status}`, (signal) => unwrap(api.GET('/v1/control/actions/{id}/diff', { params: { path: { id } }, signal })));
  const noDiff = diff.error instanceof ApiError && diff.error.body.code === 'control.no_diff';
  return (
    <section aria-labelledby="diff-title">
      <h2 id="diff-title">Diff against the original span</h2>
      {diff.loading && <p aria-live="polite">Loading the diff…</p>}
      {noDiff && <p className="muted">No diff: {(diff.error as ApiError).body.error}.</p>}
      {diff.error !== undefined && !noDiff && <ErrorNotice error={diff.error} />}
      {diff.data && 'status' in diff.data && <p className="muted">The remediation or its re-scores are still running: the diff follows.</p>}
      {diff.data && !('status' in diff.data) && <DiffTable diff={diff.data} />}
    </section>
  );
}

function DiffTable({ diff }: { diff: Diff }) {
  return (
    <>
      <dl className="facts">
        <Fact term="Completion tokens" value={`${diff.token_length_delta > 0 ? '+' : ''}${diff.token_length_delta}`} />
        <Fact term="Latency" value={`${diff.latency_delta_ms > 0 ? '+' : ''}${diff.latency_delta_ms} ms`} />
        <Fact term="Output similarity" value={`${diff.embedding_similarity.toFixed(3)} (${diff.embedding_model})`} />
      </dl>
      {diff.eval_deltas.length > 0 && (
        <table className="list">
          <caption>Evaluation scores, original against remediated output</caption>
          <thead>
            <tr>
              <th scope="col">Metric</th>
              <th scope="col" className="num">
                Original
              </th>
              <th scope="col" className="num">
                Remediated
              </th>
              <th scope="col" className="num">
                Delta
              </th>
            </tr>
          </thead>
          <tbody>
            {diff.eval_deltas.map((e) => (
              <tr key={`${e.rule_id ?? ''}:${e.metric_name}`}>
                <th scope="row">{e.metric_name}</th>
                <td className="num">{formatScore(e.original_score)}</td>
                <td className="num">{formatScore(e.remediated_score)}</td>
                <td className={`num ${deltaClass(e.delta)}`}>{formatDelta(e.delta)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

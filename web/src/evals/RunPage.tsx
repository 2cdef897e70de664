import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { formatRate, formatScore } from '../control/format';
import { formatCost, formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { RunProgress } from './RunProgress';
import { RUN_DONE, type RunDetail } from './types';

const POLL_MS = 1_000;

/** GET /v1/datasets/{id}/runs/{run_id} again every second until the run has completed or failed. */
function useLiveRun(id: string, runId: string) {
  const [state, setState] = useState<{ key: string; run?: RunDetail; error?: unknown }>({ key: '' });
  const key = `${id}/${runId}`;
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const run = await unwrap(
          api.GET('/v1/datasets/{id}/runs/{run_id}', { params: { path: { id, run_id: runId }, query: { results_limit: 100 } }, signal: controller.signal }),
        );
        setState({ key, run });
        if (!RUN_DONE.has(run.status)) timer = setTimeout(() => void poll(), POLL_MS);
      } catch (error) {
        if (!controller.signal.aborted) setState((s) => ({ ...s, key, error }));
      }
    };
    void poll();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [key]);
  return state.key === key ? { run: state.run, error: state.error } : { run: undefined, error: undefined };
}

export function RunPage() {
  const { id = '', runId = '' } = useParams();
  const { run, error } = useLiveRun(id, runId);
  useEffect(() => {
    document.title = 'Eval run · Looptrace';
  }, []);
  return (
    <>
      <p>
        <Link to={`/datasets/${id}`}>← Dataset</Link>
      </p>
      <h1>Eval run</h1>
      {error !== undefined && <ErrorNotice error={error} />}
      {!run && error === undefined && <p aria-live="polite">Loading the run…</p>}
      {run && (
        <>
          <section className="card" aria-labelledby="progress-title">
            <h2 id="progress-title">Progress</h2>
            <p role="status">
              {run.status === 'completed'
                ? 'Completed.'
                : run.status === 'failed'
                  ? `Failed: ${run.error_message ?? 'no reason given'}.`
                  : run.status === 'running'
                    ? 'Running…'
                    : 'Waiting for a worker…'}
            </p>
            <RunProgress run={run} />
            <dl className="facts">
              <div>
                <dt>Passed</dt>
                <dd>{run.pass_count}</dd>
              </div>
              <div>
                <dt>Failed</dt>
                <dd>{run.fail_count}</dd>
              </div>
              <div>
                <dt>Errors</dt>
                <dd>{run.error_count}</dd>
              </div>
              <div>
                <dt>Pass rate</dt>
                <dd>{formatRate(run.pass_rate)}</dd>
              </div>
              <div>
                <dt>Eval version</dt>
                <dd>
                  <code>{run.eval_version_id}</code>
                </dd>
              </div>
              <div>
                <dt>Created</dt>
                <dd>{formatTime(run.created_at)}</dd>
              </div>
              {run.completed_at && (
                <div>
                  <dt>Finished</dt>
                  <dd>{formatTime(run.completed_at)}</dd>
                </div>
              )}
            </dl>
          </section>
          <h2>Results</h2>
          {run.results.length === 0 ? (
            <p>No item scored yet.</p>
          ) : (
            <table className="admin">
              <caption className="visually-hidden">Per-item results, by item id{run.results_has_more ? ' (first 100)' : ''}</caption>
              <thead>
                <tr>
                  <th scope="col">Trace</th>
                  <th scope="col" className="num">
                    Score
                  </th>
                  <th scope="col">Result</th>
                  <th scope="col">Reasoning or error</th>
                  <th scope="col" className="num">
                    Cost
                  </th>
                </tr>
              </thead>
              <tbody>
                {run.results.map((r) => (
                  <tr key={r.item_id}>
                    <td>
                      <Link to={`/traces/${r.trace_id}`}>
                        <code>{r.trace_id.slice(0, 8)}</code>
                        <span className="visually-hidden"> trace {r.trace_id}</span>
                      </Link>
                    </td>
                    <td className="num">{formatScore(r.score)}</td>
                    <td>{r.passed === null ? <span className="badge error">error</span> : <span className={`badge ${r.passed ? 'ok' : 'error'}`}>{r.passed ? 'passed' : 'failed'}</span>}</td>
                    <td>{r.error ?? r.reasoning ?? ''}</td>
                    <td className="num">{formatCost(r.cost)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {run.results_has_more && <p className="hint">The first 100 results; the API pages the rest (results_cursor).</p>}
        </>
      )}
    </>
  );
}

import { useEffect, useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { ProjectOptions, useAllProjects } from '../admin/projects';
import { useAction } from '../ui/useAction';
import { deltaClass, formatDelta, formatRate, formatScore } from '../control/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { EvalsNav } from './EvalsNav';
import { toInstant, toLocal } from './EvaluationsPage';
import type { Comparison } from './types';

const DAY = 86_400_000;

/** GET /v1/eval/compare: one metric's average score and pass rate in two time windows, side by side. */
export function ComparePage() {
  const projects = useAllProjects();
  const compare = useAction();
  const [now] = useState(() => Date.now());
  const [metric, setMetric] = useState('');
  const [projectId, setProjectId] = useState('');
  const [win, setWin] = useState({
    baseline_from: toLocal(new Date(now - 14 * DAY).toISOString()),
    baseline_to: toLocal(new Date(now - 7 * DAY).toISOString()),
    candidate_from: toLocal(new Date(now - 7 * DAY).toISOString()),
    candidate_to: toLocal(new Date(now + 60_000).toISOString()),
  });
  const [result, setResult] = useState<Comparison | null>(null);
  useEffect(() => {
    document.title = 'Compare windows · Looptrace';
  }, []);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const query = {
      metric,
      ...(projectId ? { project_id: projectId } : {}),
      baseline_from: toInstant(win.baseline_from),
      baseline_to: toInstant(win.baseline_to),
      candidate_from: toInstant(win.candidate_from),
      candidate_to: toInstant(win.candidate_to),
    };
    setResult(null);
    const answer = await compare.run('compare', () => unwrap(api.GET('/v1/eval/compare', { params: { query } })));
    if (answer) setResult(answer);
  };
  const windowInput = (field: keyof typeof win, label: string) => (
    <label>
      {label}
      <input type="datetime-local" required value={win[field]} onChange={(e) => setWin({ ...win, [field]: e.target.value })} />
    </label>
  );

  return (
    <>
      <h1>Compare windows</h1>
      <EvalsNav />
      <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-labelledby="compare-title">
        <h2 id="compare-title">Two time windows of one metric</h2>
        <div className="form-row">
          <label>
            Metric
            <input value={metric} onChange={(e) => setMetric(e.target.value)} required maxLength={200} />
          </label>
          <label>
            Project
            <select value={projectId} onChange={(e) => setProjectId(e.target.value)}>
              <ProjectOptions projects={projects.data} empty="Every project" />
            </select>
          </label>
        </div>
        <fieldset className="form-row">
          <legend>Baseline window</legend>
          {windowInput('baseline_from', 'Baseline from')}
          {windowInput('baseline_to', 'Baseline to')}
        </fieldset>
        <fieldset className="form-row">
          <legend>Candidate window</legend>
          {windowInput('candidate_from', 'Candidate from')}
          {windowInput('candidate_to', 'Candidate to')}
        </fieldset>
        <button type="submit" className="primary" disabled={compare.busy !== null}>
          {compare.busy ? 'Comparing…' : 'Compare'}
        </button>
        {compare.error !== undefined && <ErrorNotice error={compare.error} />}
      </form>
      {result && (
        <table className="admin compare">
          <caption>
            <code>{result.metric}</code>: baseline and candidate windows
          </caption>
          <thead>
            <tr>
              <th scope="col">Measure</th>
              <th scope="col" className="num">
                Baseline
              </th>
              <th scope="col" className="num">
                Candidate
              </th>
              <th scope="col" className="num">
                Delta
              </th>
            </tr>
          </thead>
          <tbody>
            <tr>
              <th scope="row">Average score</th>
              <td className="num">{formatScore(result.baseline.avg_score)}</td>
              <td className="num">{formatScore(result.candidate.avg_score)}</td>
              <td className={`num ${deltaClass(result.delta.avg_score)}`}>{formatDelta(result.delta.avg_score)}</td>
            </tr>
            <tr>
              <th scope="row">Pass rate</th>
              <td className="num">{formatRate(result.baseline.pass_rate)}</td>
              <td className="num">{formatRate(result.candidate.pass_rate)}</td>
              <td className={`num ${deltaClass(result.delta.pass_rate)}`}>{result.delta.pass_rate === null ? '—' : `${formatDelta(result.delta.pass_rate * 100)} pts`}</td>
            </tr>
            <tr>
              <th scope="row">Evaluations</th>
              <td className="num">{result.baseline.count}</td>
              <td className="num">{result.candidate.count}</td>
              <td className="num">—</td>
            </tr>
          </tbody>
        </table>
      )}
    </>
  );
}

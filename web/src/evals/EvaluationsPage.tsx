import { ListState, LoadMore } from '../ui/lists';
import { useEffect, useState, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { ProjectOptions, useAllProjects } from '../admin/projects';
import { usePages } from '../api/usePages';
import { formatScore } from '../control/format';
import { formatCost, formatTime } from '../traces/format';
import { EvalsNav } from './EvalsNav';
import { useAllRules } from './rules';
import { EVAL_STATUSES, statusClass, type EvalQuery, type EvalStatus, type EvaluationList } from './types';

/** The filters of GET /v1/evals kept in the URL (from/to as ISO instants). */
const FIELDS = ['metric_name', 'status', 'rule_id', 'project_id', 'context', 'trace_id', 'from', 'to'] as const;
type Field = (typeof FIELDS)[number];

function queryFromParams(params: URLSearchParams): EvalQuery {
  const query: Record<string, string> = {};
  for (const field of FIELDS) {
    const value = params.get(field);
    if (value) query[field] = value;
  }
  return query as EvalQuery;
}

/** datetime-local (the browser's local time) ⇄ ISO instant. */
export const toInstant = (local: string): string => (local ? new Date(local).toISOString() : '');
export const toLocal = (iso: string | undefined): string => {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

export function EvaluationsPage() {
  const [params, setParams] = useSearchParams();
  const query = queryFromParams(params);
  const key = new URLSearchParams(query as Record<string, string>).toString();
  const list = usePages(
    `evals?${key}`,
    (cursor, signal) => unwrap(api.GET('/v1/evals', { params: { query: { ...query, limit: 50, cursor } }, signal })),
    (page: EvaluationList) => page.evals,
  );
  const rules = useAllRules();
  const ruleName = (id: string | null) => (id === null ? 'POST /v1/eval' : (rules.data?.find((r) => r.id === id)?.name ?? id.slice(0, 8)));
  useEffect(() => {
    document.title = 'Evaluations · Looptrace';
  }, []);

  return (
    <>
      <h1>Evaluations</h1>
      <EvalsNav />
      <EvalFilterForm key={key} query={query} onApply={(next) => setParams(next)} />
      <ListState list={list} loading="Loading evaluations…" empty={<p>No evaluations match these filters.</p>} />
      {list.items.length > 0 && (
        <table className="admin">
          <caption className="visually-hidden">Evaluations, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Created</th>
              <th scope="col">Metric</th>
              <th scope="col">Status</th>
              <th scope="col" className="num">
                Score
              </th>
              <th scope="col">Result</th>
              <th scope="col">Trace</th>
              <th scope="col">Rule</th>
              <th scope="col">Judge</th>
              <th scope="col" className="num">
                Cost
              </th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((e) => (
              <tr key={e.id}>
                <td>{formatTime(e.created_at)}</td>
                <td>
                  <code>{e.metric_name}</code>
                  {e.context === 'remediation' && <div className="muted">remediation</div>}
                </td>
                <td>
                  <span className={`badge ${statusClass(e.status)}`}>{e.status}</span>
                  {e.error && <div className="muted">{e.error}</div>}
                </td>
                <td className="num">{formatScore(e.score)}</td>
                <td>
                  {e.passed === null ? '—' : <span className={`badge ${e.passed ? 'ok' : 'error'}`}>{e.passed ? 'passed' : 'failed'}</span>}
                  {e.reasoning && <div className="muted">{e.reasoning}</div>}
                </td>
                <td>
                  <Link to={`/traces/${e.trace_id}`}>
                    <code>{e.trace_id.slice(0, 8)}</code>
                    <span className="visually-hidden"> trace {e.trace_id}</span>
                  </Link>
                </td>
                <td>{ruleName(e.rule_id)}</td>
                <td>{e.judge_model ?? 'builtin'}</td>
                <td className="num">{formatCost(e.cost)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={list} />
    </>
  );
}

function EvalFilterForm({ query, onApply }: { query: EvalQuery; onApply: (params: Record<string, string>) => void }) {
  const projects = useAllProjects();
  const rules = useAllRules();
  const [draft, setDraft] = useState<Partial<Record<Field, string>>>({ ...(query as Record<string, string>), from: toLocal(query.from), to: toLocal(query.to) });
  const set = (field: Field) => (e: { target: { value: string } }) => setDraft({ ...draft, [field]: e.target.value });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const next: Record<string, string> = {};
    for (const field of FIELDS) {
      const value = field === 'from' || field === 'to' ? toInstant(draft[field] ?? '') : (draft[field] ?? '').trim();
      if (value) next[field] = value;
    }
    onApply(next);
  };
  return (
    <form className="filters" onSubmit={submit} aria-label="Filter evaluations">
      <label>
        Metric
        <input value={draft.metric_name ?? ''} onChange={set('metric_name')} />
      </label>
      <label>
        Status
        <select value={draft.status ?? ''} onChange={set('status')}>
          <option value="">Any status</option>
          {(Object.keys(EVAL_STATUSES) as EvalStatus[]).map((s) => (
            <option key={s} value={s}>
              {EVAL_STATUSES[s]}
            </option>
          ))}
        </select>
      </label>
      <label>
        Rule
        <select value={draft.rule_id ?? ''} onChange={set('rule_id')}>
          <option value="">Any rule</option>
          {rules.data?.map((r) => (
            <option key={r.id} value={r.id}>
              {r.name}
            </option>
          ))}
        </select>
      </label>
      <label>
        Project
        <select value={draft.project_id ?? ''} onChange={set('project_id')}>
          <ProjectOptions projects={projects.data} empty="Any project" />
        </select>
      </label>
      <label>
        Context
        <select value={draft.context ?? ''} onChange={set('context')}>
          <option value="">Any context</option>
          <option value="fresh">Fresh</option>
          <option value="remediation">Remediation</option>
        </select>
      </label>
      <label>
        Trace id
        <input value={draft.trace_id ?? ''} onChange={set('trace_id')} />
      </label>
      <label>
        Created from
        <input type="datetime-local" value={draft.from ?? ''} onChange={set('from')} />
      </label>
      <label>
        Created to
        <input type="datetime-local" value={draft.to ?? ''} onChange={set('to')} />
      </label>
      <div className="filter-actions">
        <button type="submit" className="primary">
          Apply filters
        </button>
        <button type="button" onClick={() => onApply({})}>
          Clear
        </button>
      </div>
    </form>
  );
}

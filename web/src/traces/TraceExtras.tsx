import { ListState, LoadMore } from '../ui/lists';
import { useReducer, useState, type FormEvent } from 'react';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';
import { usePages } from '../api/usePages';
import { api, unwrap } from '../api/client';
import type { paths } from '../api/schema';
import { ErrorNotice } from '../ui/ErrorNotice';
import { formatCost, formatTime } from './format';

type EvalBody = paths['/v1/eval']['post']['requestBody']['content']['application/json'];
type EvalConfig = EvalBody['config'];
type BuiltinConfig = Extract<EvalConfig, { provider: 'builtin' }>;
type JudgeConfig = Exclude<EvalConfig, BuiltinConfig>;
type BuiltinCheck = BuiltinConfig['preset'];
type JudgePreset = Exclude<JudgeConfig['preset'], 'custom'>;
type FeedbackLabel = NonNullable<paths['/v1/feedback']['post']['requestBody']['content']['application/json']['label']>;

/** The API's builtin checks; a check the API adds fails the build until it is named here. */
const BUILTIN_CHECKS: Record<BuiltinCheck, string> = {
  exact_match: 'Exact match (params: expected)',
  contains: 'Contains (params: value or values)',
  regex: 'Regular expression (params: pattern)',
  json_valid: 'Valid JSON (no params)',
  json_schema: 'JSON schema (params: schema)',
  levenshtein: 'Levenshtein similarity (params: expected)',
  length_between: 'Length between (params: min, max)',
};
/** The API's judge templates (a custom prompt is left to the API). */
const JUDGE_PRESETS: Record<JudgePreset, string> = {
  correctness: 'Correctness',
  relevance: 'Relevance',
  hallucination: 'Hallucination',
  toxicity: 'Toxicity',
  helpfulness: 'Helpfulness',
  conciseness: 'Conciseness',
};
const FEEDBACK_LABELS: Record<FeedbackLabel, string> = { good: 'Good', neutral: 'Neutral', bad: 'Bad' };
type Provider = EvalConfig['provider'];
const PROVIDERS: Record<Provider, string> = { builtin: 'Builtin check', openai: 'OpenAI judge', anthropic: 'Anthropic judge' };

/** The builtin check's parameters as typed: empty is `{}`, anything not JSON is undefined. */
function parseParams(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A trace's evaluations, with the form that adds one. */
export function TraceEvaluations({ traceId }: { traceId: string }) {
  const [version, reload] = useReducer((n: number) => n + 1, 0);
  return (
    <section aria-labelledby="evals-title">
      <h2 id="evals-title">Evaluations</h2>
      <EvalList traceId={traceId} version={version} />
      <EvaluateForm traceId={traceId} onDone={reload} />
    </section>
  );
}

/** The feedback on a trace, with the form that adds some. */
export function TraceFeedback({ traceId }: { traceId: string }) {
  const [version, reload] = useReducer((n: number) => n + 1, 0);
  return (
    <section aria-labelledby="feedback-title">
      <h2 id="feedback-title">Feedback</h2>
      <FeedbackList traceId={traceId} version={version} />
      <FeedbackForm traceId={traceId} onDone={reload} />
    </section>
  );
}

function EvalList({ traceId, version }: { traceId: string; version: number }) {
  const list = usePages(
    `evals:${traceId}:${version}`,
    (cursor, signal) => unwrap(api.GET('/v1/evals', { params: { query: { trace_id: traceId, limit: 50, cursor } }, signal })),
    (page) => page.evals,
  );
  return (
    <>
      <ListState list={list} loading="Loading the evaluations…" empty={<p className="muted">No evaluations of this trace yet.</p>} />
      {list.items.length > 0 && (
        <table className="admin evals">
          <caption className="visually-hidden">Evaluations of this trace, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Metric</th>
              <th scope="col">Status</th>
              <th scope="col" className="num">
                Score
              </th>
              <th scope="col">Result</th>
              <th scope="col">Scorer</th>
              <th scope="col" className="num">
                Cost
              </th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((e) => (
              <tr key={e.id}>
                <td>
                  {e.metric_name}
                  {e.context === 'remediation' && <div className="muted">re-score of a remediation</div>}
                </td>
                <td>{e.status}</td>
                <td className="num">{e.score === null ? '—' : e.score.toFixed(2)}</td>
                <td>
                  {e.passed !== null && <span className={`badge ${e.passed ? 'ok' : 'error'}`}>{e.passed ? 'passed' : 'failed'}</span>}
                  {e.reasoning && <div>{e.reasoning}</div>}
                  {e.error && <div className="muted">Error: {e.error}</div>}
                </td>
                <td>
                  {String(e.config.provider ?? '')} {String(e.config.preset ?? '')}
                  {e.judge_model && <div className="muted">{e.judge_model}</div>}
                  {e.rule_id && <div className="muted">by an eval rule</div>}
                </td>
                <td className="num">{formatCost(e.cost)}</td>
                <td>{formatTime(e.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={list} label="Load more evaluations" />
    </>
  );
}

function EvaluateForm({ traceId, onDone }: { traceId: string; onDone: () => void }) {
  const allowed = usePermission('POST /v1/eval');
  const action = useAction();
  const [provider, setProvider] = useState<Provider>('builtin');
  const [preset, setPreset] = useState<string>('json_valid');
  const [metric, setMetric] = useState('');
  const [params, setParams] = useState('');
  const [model, setModel] = useState('');
  const [paramsError, setParamsError] = useState('');
  const [done, setDone] = useState('');
  const disabled = !allowed.allowed || action.busy !== null;
  const presets: Record<string, string> = provider === 'builtin' ? BUILTIN_CHECKS : JUDGE_PRESETS;

  const chooseProvider = (next: Provider) => {
    setProvider(next);
    setPreset(next === 'builtin' ? 'json_valid' : 'correctness');
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone('');
    setParamsError('');
    let config: EvalConfig;
    if (provider === 'builtin') {
      const parsed = parseParams(params);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        setParamsError('The parameters must be a JSON object, e.g. {"expected": "Paris."}.');
        return;
      }
      config = { provider, preset: preset as BuiltinCheck, params: parsed as Record<string, unknown> };
    } else {
      config = { provider, preset: preset as JudgePreset, ...(model.trim() ? { model: model.trim() } : {}) };
    }
    const body: EvalBody = { trace_id: traceId, metric_name: metric.trim() || preset, config };
    const answer = await action.run('evaluate', () => unwrap(api.POST('/v1/eval', { body })));
    if (answer) {
      setDone(`Evaluation ${answer.status}.`);
      onDone();
    }
  };

  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-labelledby="evaluate-title" aria-describedby={allowed.allowed ? undefined : 'evaluate-reason'}>
      <h3 id="evaluate-title">Evaluate</h3>
      <Reason id="evaluate-reason" permission={allowed} what="Evaluating" />
      <div className="form-row">
        <label>
          Scorer
          <select value={provider} onChange={(e) => chooseProvider(e.target.value as Provider)} disabled={disabled}>
            {Object.entries(PROVIDERS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          {provider === 'builtin' ? 'Check' : 'Judge template'}
          <select value={preset} onChange={(e) => setPreset(e.target.value)} disabled={disabled}>
            {Object.entries(presets).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Metric name
          <input value={metric} onChange={(e) => setMetric(e.target.value)} placeholder={preset} maxLength={200} disabled={disabled} />
        </label>
        {provider === 'builtin' ? (
          <label>
            Parameters (JSON)
            <input value={params} onChange={(e) => setParams(e.target.value)} placeholder="{}" disabled={disabled} aria-invalid={paramsError ? 'true' : undefined} />
          </label>
        ) : (
          <label>
            Judge model
            <input value={model} onChange={(e) => setModel(e.target.value)} placeholder="the connection's default" maxLength={200} disabled={disabled} />
          </label>
        )}
        <button type="submit" className="primary" disabled={disabled}>
          {action.busy ? 'Evaluating…' : 'Evaluate'}
        </button>
      </div>
      {paramsError && (
        <p role="alert" className="notice notice-error">
          {paramsError}
        </p>
      )}
      {action.error !== undefined && <ErrorNotice error={action.error} />}
      <p role="status" className="hint">
        {done}
      </p>
    </form>
  );
}

function FeedbackList({ traceId, version }: { traceId: string; version: number }) {
  const list = usePages(
    `feedback:${traceId}:${version}`,
    (cursor, signal) => unwrap(api.GET('/v1/feedback', { params: { query: { trace_id: traceId, limit: 50, cursor } }, signal })),
    (page) => page.feedback,
  );
  return (
    <>
      <ListState list={list} loading="Loading the feedback…" empty={<p className="muted">No feedback on this trace yet.</p>} />
      {list.items.length > 0 && (
        <table className="admin feedback">
          <caption className="visually-hidden">Feedback on this trace, newest first</caption>
          <thead>
            <tr>
              <th scope="col" className="num">
                Score
              </th>
              <th scope="col">Label</th>
              <th scope="col">Comment</th>
              <th scope="col">By</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((f) => (
              <tr key={f.id}>
                <td className="num">{f.score.toFixed(2)}</td>
                <td>
                  <span className={`badge ${f.label === 'good' ? 'ok' : f.label === 'bad' ? 'error' : 'neutral'}`}>{f.label}</span>
                </td>
                <td>{f.comment ?? <span className="muted">none</span>}</td>
                <td>
                  <code>{f.created_by}</code>
                </td>
                <td>{formatTime(f.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={list} label="Load more feedback" />
    </>
  );
}

function FeedbackForm({ traceId, onDone }: { traceId: string; onDone: () => void }) {
  const allowed = usePermission('POST /v1/feedback');
  const action = useAction();
  const [score, setScore] = useState('');
  const [label, setLabel] = useState<FeedbackLabel | ''>('');
  const [comment, setComment] = useState('');
  const [done, setDone] = useState('');
  const disabled = !allowed.allowed || action.busy !== null;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone('');
    const body = {
      trace_id: traceId,
      score: Number(score),
      ...(label ? { label } : {}),
      ...(comment.trim() ? { comment: comment.trim() } : {}),
    };
    const created = await action.run('feedback', () => unwrap(api.POST('/v1/feedback', { body })));
    if (created) {
      setDone(`Feedback added (${created.label}).`);
      setScore('');
      setLabel('');
      setComment('');
      onDone();
    }
  };

  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-labelledby="add-feedback-title" aria-describedby={allowed.allowed ? undefined : 'feedback-reason'}>
      <h3 id="add-feedback-title">Add feedback</h3>
      <Reason id="feedback-reason" permission={allowed} what="Adding feedback" />
      <div className="form-row">
        <label>
          Score (0 to 1)
          <input type="number" min={0} max={1} step={0.01} inputMode="decimal" value={score} onChange={(e) => setScore(e.target.value)} required disabled={disabled} />
        </label>
        <label>
          Label
          <select value={label} onChange={(e) => setLabel(e.target.value as FeedbackLabel | '')} disabled={disabled}>
            <option value="">from the score</option>
            {Object.entries(FEEDBACK_LABELS).map(([value, text]) => (
              <option key={value} value={value}>
                {text}
              </option>
            ))}
          </select>
        </label>
        <label>
          Comment
          <textarea value={comment} onChange={(e) => setComment(e.target.value)} maxLength={10_000} rows={2} disabled={disabled} />
        </label>
        <button type="submit" className="primary" disabled={disabled}>
          {action.busy ? 'Adding…' : 'Add feedback'}
        </button>
      </div>
      {action.error !== undefined && <ErrorNotice error={action.error} />}
      <p role="status" className="hint">
        {done}
      </p>
    </form>
  );
}

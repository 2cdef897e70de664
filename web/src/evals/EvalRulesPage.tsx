import { useEffect, useState, type FormEvent } from 'react';
import { api, noContent, unwrap } from '../api/client';
import { useApi } from '../api/useApi';
import { ProjectOptions, useAllProjects } from '../admin/projects';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';
import { usePages } from '../api/usePages';
import { formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { FormFooter, useEditor } from '../ui/editing';
import { EditableTable } from '../ui/EditableTable';
import { useRowDelete } from '../ui/RowActions';
import { EvalsNav } from './EvalsNav';
import {
  BUILTIN_PRESETS,
  JUDGE_PRESETS,
  PROVIDERS,
  describeConfig,
  type BuiltinPreset,
  type EvalConfig,
  type EvalRule,
  type JudgePreset,
  type Provider,
  type RuleBody,
  type RuleFilter,
} from './types';

export function EvalRulesPage() {
  const editor = useEditor((rule: EvalRule) => rule.version);
  const list = usePages(
    `eval-rules:${editor.version}`,
    (cursor, signal) => unwrap(api.GET('/v1/eval-rules', { params: { query: { limit: 100, cursor } }, signal })),
    (page) => page.eval_rules,
  );
  const projects = useAllProjects();
  const projectName = (id: string | null) => (id === null ? 'every project' : (projects.data?.find((p) => p.id === id)?.name ?? id));
  const deleter = useRowDelete('DELETE /v1/eval-rules/{id}', { reasonId: 'delete-rule-reason', what: 'Deleting rules', reload: editor.reload });
  useEffect(() => {
    document.title = 'Eval rules · Looptrace';
  }, []);

  return (
    <>
      <h1>Eval rules</h1>
      <EvalsNav />
      <p className="hint">Traces stored from now on that match a rule are scored automatically; every change is kept as a new version.</p>
      <RuleForm key={editor.formKey} rule={editor.editing} onSaved={editor.onSaved} onCancel={editor.onCancel} />
      {editor.status}
      <h2>Rules</h2>
      <EditableTable
        list={list}
        loading="Loading the eval rules…"
        empty={<p>No eval rules yet.</p>}
        caption="Eval rules of this tenant"
        className="admin"
        columns={[
          'Name and metric',
          'Evaluator',
          'Project',
          { label: 'Sampling', className: 'num' },
          { label: 'Threshold', className: 'num' },
          { label: 'Min score drop', className: 'num' },
          'Enabled',
          'Version',
        ]}
        deleter={deleter}
        cells={(rule) => (
          <>
            <td>
              {rule.name}
              <div className="muted">
                metric <code>{rule.metric_name}</code>
              </div>
            </td>
            <td>{describeConfig(rule.config)}</td>
            <td>{projectName(rule.project_id)}</td>
            <td className="num">{Math.round(rule.sampling_rate * 1000) / 10}%</td>
            <td className="num">{rule.threshold}</td>
            <td className="num">{rule.min_score_drop}</td>
            <td>
              <span className={`badge ${rule.enabled ? 'ok' : 'neutral'}`}>{rule.enabled ? 'enabled' : 'disabled'}</span>
            </td>
            <td>
              <RuleVersion rule={rule} />
            </td>
          </>
        )}
        actions={(rule) => ({
          subject: rule.name,
          onEdit: () => editor.edit(rule),
          question: 'Its versions and evaluations stay.',
          call: () => noContent(api.DELETE('/v1/eval-rules/{id}', { params: { path: { id: rule.id } } })),
        })}
      />
    </>
  );
}

/** The rule's version number; on demand, the snapshot it was stored as (GET /v1/eval-versions/{id}). */
function RuleVersion({ rule }: { rule: EvalRule }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      v{rule.version}{' '}
      <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? 'Hide' : 'Show'} snapshot<span className="visually-hidden"> of {rule.name}</span>
      </button>
      {open && <VersionSnapshot id={rule.current_version_id} />}
    </>
  );
}

function VersionSnapshot({ id }: { id: string }) {
  const version = useApi(`eval-version:${id}`, (signal) => unwrap(api.GET('/v1/eval-versions/{id}', { params: { path: { id } }, signal })));
  if (version.error !== undefined) return <ErrorNotice error={version.error} />;
  if (!version.data) return <p aria-live="polite">Loading…</p>;
  const v = version.data;
  return (
    <dl className="facts">
      <div>
        <dt>Version id</dt>
        <dd>
          <code>{v.id}</code>
        </dd>
      </div>
      <div>
        <dt>Stored</dt>
        <dd>{formatTime(v.created_at)}</dd>
      </div>
      <div>
        <dt>Filter</dt>
        <dd>
          <code>{JSON.stringify(v.filter)}</code>
        </dd>
      </div>
      <div>
        <dt>Config</dt>
        <dd>
          <code>{JSON.stringify(v.config)}</code>
        </dd>
      </div>
    </dl>
  );
}

/** A JSON object typed in a textarea: undefined when empty, an Error when it is not an object. */
function parseObject(text: string): Record<string, unknown> | undefined | Error {
  if (text.trim() === '') return undefined;
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return new Error('must be a JSON object');
    return value as Record<string, unknown>;
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

const objectText = (value: Record<string, unknown> | undefined): string => (value && Object.keys(value).length > 0 ? JSON.stringify(value, null, 2) : '');

/** Create a rule, or edit one (PATCH stores the result as the rule's next version). */
function RuleForm({ rule, onSaved, onCancel }: { rule: EvalRule | null; onSaved: (message: string) => void; onCancel: () => void }) {
  const allowed = usePermission(rule ? 'PATCH /v1/eval-rules/{id}' : 'POST /v1/eval-rules');
  const projects = useAllProjects();
  const save = useAction();
  const config = rule?.config ?? {};
  const [name, setName] = useState(rule?.name ?? '');
  const [metric, setMetric] = useState(rule?.metric_name ?? '');
  const [provider, setProvider] = useState<Provider>((config.provider as Provider | undefined) ?? 'builtin');
  const [preset, setPreset] = useState<string>((config.preset as string | undefined) ?? 'exact_match');
  const [model, setModel] = useState(typeof config.model === 'string' ? config.model : '');
  const [prompt, setPrompt] = useState(typeof config.prompt === 'string' ? config.prompt : '');
  const [params, setParams] = useState(objectText(config.params as Record<string, unknown> | undefined));
  const [projectId, setProjectId] = useState(rule?.project_id ?? '');
  const [filter, setFilter] = useState(objectText(rule?.filter));
  const [sampling, setSampling] = useState(String(rule?.sampling_rate ?? 1));
  const [threshold, setThreshold] = useState(String(rule?.threshold ?? 0.5));
  const [minDrop, setMinDrop] = useState(String(rule?.min_score_drop ?? 0));
  const [enabled, setEnabled] = useState(rule?.enabled ?? true);
  const [invalid, setInvalid] = useState('');
  const disabled = !allowed.allowed || save.busy !== null;
  const presets: Record<string, string> = provider === 'builtin' ? BUILTIN_PRESETS : JUDGE_PRESETS;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setInvalid('');
    const parsedParams = parseObject(params);
    const parsedFilter = parseObject(filter);
    if (parsedParams instanceof Error) return setInvalid(`Parameters: ${parsedParams.message}.`);
    if (parsedFilter instanceof Error) return setInvalid(`Filter: ${parsedFilter.message}.`);
    const evaluator: EvalConfig =
      provider === 'builtin'
        ? { provider, preset: preset as BuiltinPreset, ...(parsedParams ? { params: parsedParams } : {}) }
        : { provider, preset: preset as JudgePreset, ...(model.trim() ? { model: model.trim() } : {}), ...(prompt.trim() ? { prompt } : {}) };
    const body: RuleBody = {
      name,
      metric_name: metric,
      project_id: projectId || null,
      filter: (parsedFilter ?? {}) as RuleFilter,
      sampling_rate: Number(sampling),
      config: evaluator,
      threshold: Number(threshold),
      min_score_drop: Number(minDrop),
      enabled,
    };
    const saved = await save.run('save', () =>
      rule ? unwrap(api.PATCH('/v1/eval-rules/{id}', { params: { path: { id: rule.id } }, body })) : unwrap(api.POST('/v1/eval-rules', { body })),
    );
    if (saved) {
      onSaved(rule ? `Saved ${saved.name} as version ${saved.version}.` : `Created ${saved.name}.`);
    }
  };

  const title = rule ? `Edit ${rule.name}` : 'Create an eval rule';
  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-labelledby="rule-form-title" aria-describedby={allowed.allowed ? undefined : 'rule-form-reason'}>
      <h2 id="rule-form-title">{title}</h2>
      <Reason id="rule-form-reason" permission={allowed} what={rule ? 'Editing rules' : 'Creating rules'} />
      <div className="form-row">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} disabled={disabled} />
        </label>
        <label>
          Metric name
          <input value={metric} onChange={(e) => setMetric(e.target.value)} required maxLength={200} disabled={disabled} />
        </label>
        <label>
          Project
          <select value={projectId} onChange={(e) => setProjectId(e.target.value)} disabled={disabled}>
            <ProjectOptions projects={projects.data} empty="Every project" />
          </select>
        </label>
      </div>
      <div className="form-row">
        <label>
          Evaluator
          <select
            value={provider}
            onChange={(e) => {
              const next = e.target.value as Provider;
              setProvider(next);
              setPreset(next === 'builtin' ? 'exact_match' : 'correctness');
            }}
            disabled={disabled}
          >
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
        {provider !== 'builtin' && (
          <label>
            Judge model (optional)
            <input value={model} onChange={(e) => setModel(e.target.value)} maxLength={200} disabled={disabled} />
          </label>
        )}
      </div>
      {provider === 'builtin' ? (
        <label>
          Check parameters (JSON object, optional)
          <textarea rows={2} value={params} onChange={(e) => setParams(e.target.value)} placeholder='{"case_sensitive": false}' disabled={disabled} />
        </label>
      ) : (
        <label>
          Prompt {preset === 'custom' ? '(required)' : '(optional: replaces the template)'}
          <textarea rows={3} value={prompt} onChange={(e) => setPrompt(e.target.value)} required={preset === 'custom'} disabled={disabled} />
        </label>
      )}
      <label>
        Filter (JSON object of GET /v1/traces filters, optional)
        <textarea rows={2} value={filter} onChange={(e) => setFilter(e.target.value)} placeholder='{"model": "gpt-4o", "failure_type": "Timeout"}' disabled={disabled} />
      </label>
      <div className="form-row">
        <label>
          Sampling rate (0–1)
          <input type="number" min={0} max={1} step="any" value={sampling} onChange={(e) => setSampling(e.target.value)} required disabled={disabled} />
        </label>
        <label>
          Threshold (0–1)
          <input type="number" min={0} max={1} step="any" value={threshold} onChange={(e) => setThreshold(e.target.value)} required disabled={disabled} />
        </label>
        <label>
          Min score drop (0–1)
          <input type="number" min={0} max={1} step="any" value={minDrop} onChange={(e) => setMinDrop(e.target.value)} required disabled={disabled} />
        </label>
        <label className="check">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} disabled={disabled} />
          Enabled
        </label>
      </div>
      <p className="hint">Passed = score ≥ threshold. A remediation regression is reported only when the score drops by more than the min score drop.</p>
      <FormFooter
        editing={rule !== null}
        busy={save.busy !== null}
        disabled={disabled}
        createLabel="Create rule"
        saveLabel="Save as a new version"
        onCancel={onCancel}
        invalid={invalid}
        error={save.error}
      />
    </form>
  );
}

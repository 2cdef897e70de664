import { useEffect, useReducer, useState, type FormEvent } from 'react';
import { api, noContent, unwrap, type Ok } from '../api/client';
import type { paths } from '../api/schema';
import { ProjectOptions, useAllProjects, type Project } from '../admin/projects';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';
import { usePages } from '../api/usePages';
import { FAILURE_TYPES, type FailureType } from '../traces/filters';
import { formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { EditableTable } from '../ui/EditableTable';
import { useRowDelete } from '../ui/RowActions';
import { FailuresNav } from './FailuresNav';

type RuleList = Ok<'/v1/failure-rules'>;
type CreateRule = NonNullable<paths['/v1/failure-rules']['post']['requestBody']>['content']['application/json'];
type RuleMatch = CreateRule['match'];

/** Failure rules (GET /v1/failure-rules): spans stored from now on that match one are clustered as failures. */
export function FailureRulesPage() {
  const [version, reload] = useReducer((n: number) => n + 1, 0);
  const list = usePages(
    `failure-rules:${version}`,
    (cursor, signal) => unwrap(api.GET('/v1/failure-rules', { params: { query: { limit: 100, cursor } }, signal })),
    (page: RuleList) => page.failure_rules,
  );
  const projects = useAllProjects();
  const deleter = useRowDelete('DELETE /v1/failure-rules/{id}', { reasonId: 'delete-rule-reason', what: 'Deleting rules', reload });
  const toggle = useAction();
  const mayToggle = usePermission('PATCH /v1/failure-rules/{id}');
  useEffect(() => {
    document.title = 'Failure rules · Looptrace';
  }, []);
  const projectName = (id: string | null) => (id === null ? 'every project' : (projects.data?.find((p) => p.id === id)?.name ?? id));

  return (
    <>
      <h1>Failure rules</h1>
      <FailuresNav />
      <p className="hint">A span matches a rule when every condition it gives holds. Rules apply to spans stored after they are created; deleting one keeps its clusters.</p>
      <CreateRuleForm projects={projects.data?.filter((p) => p.status === 'active') ?? []} onCreated={reload} />
      <h2>Rules</h2>
      <EditableTable
        list={list}
        loading="Loading the rules…"
        empty={<p>No failure rules yet.</p>}
        caption="Failure rules of this tenant"
        className="admin rules"
        columns={['Name', 'Project', 'Conditions', 'Status', 'Created']}
        deleter={deleter}
        notices={
          <>
            {deleter.reason}
            <Reason id="toggle-rule-reason" permission={mayToggle} what="Enabling and disabling rules" />
            {deleter.error}
            {toggle.error !== undefined && <ErrorNotice error={toggle.error} />}
          </>
        }
        cells={(rule) => (
          <>
            <td>{rule.name}</td>
            <td>{projectName(rule.project_id)}</td>
            <td>
              <ul className="conditions">
                {Object.entries(rule.match).map(([key, value]) => (
                  <li key={key}>
                    <code>{key}</code>: {Array.isArray(value) ? value.join(', ') : String(value)}
                  </li>
                ))}
              </ul>
            </td>
            <td>{rule.enabled ? <span className="badge ok">enabled</span> : <span className="badge">disabled</span>}</td>
            <td>{formatTime(rule.created_at)}</td>
          </>
        )}
        actions={(rule) => ({
          subject: rule.name,
          question: `Delete ${rule.name}? Its clusters stay.`,
          call: () => noContent(api.DELETE('/v1/failure-rules/{id}', { params: { path: { id: rule.id } } })),
          children: (
            <>
              <button
                type="button"
                disabled={!mayToggle.allowed || toggle.busy !== null}
                aria-describedby={mayToggle.allowed ? undefined : 'toggle-rule-reason'}
                onClick={() =>
                  void toggle
                    .run(rule.id, () => unwrap(api.PATCH('/v1/failure-rules/{id}', { params: { path: { id: rule.id } }, body: { enabled: !rule.enabled } })))
                    .then((done) => done && reload())
                }
              >
                {rule.enabled ? 'Disable' : 'Enable'}
                <span className="visually-hidden"> {rule.name}</span>
              </button>{' '}
            </>
          ),
        })}
      />
    </>
  );
}

const EMPTY = { name: '', projectId: '', types: [] as FailureType[], errorContains: '', errorRegex: '', statusCodes: '', latencyOver: '', model: '', spanName: '' };

function CreateRuleForm({ projects, onCreated }: { projects: Project[]; onCreated: () => void }) {
  const allowed = usePermission('POST /v1/failure-rules');
  const create = useAction();
  const [form, setForm] = useState(EMPTY);
  const [done, setDone] = useState('');
  const disabled = !allowed.allowed || create.busy !== null;
  const set = <K extends keyof typeof EMPTY>(key: K, value: (typeof EMPTY)[K]) => setForm((f) => ({ ...f, [key]: value }));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone('');
    // Only the conditions given; the API refuses a rule without any, with its own reason.
    const match: RuleMatch = {};
    if (form.types.length > 0) match.failure_types = form.types;
    if (form.errorContains.trim()) match.error_contains = form.errorContains.trim();
    if (form.errorRegex.trim()) match.error_regex = form.errorRegex.trim();
    const codes = form.statusCodes.split(/[\s,]+/).filter(Boolean).map(Number);
    if (codes.length > 0) match.status_codes = codes;
    if (form.latencyOver.trim()) match.latency_ms_over = Number(form.latencyOver);
    if (form.model.trim()) match.model = form.model.trim();
    if (form.spanName.trim()) match.name = form.spanName.trim();
    const body: CreateRule = { name: form.name, match, ...(form.projectId ? { project_id: form.projectId } : {}) };
    const rule = await create.run('create', () => unwrap(api.POST('/v1/failure-rules', { body })));
    if (rule) {
      setForm(EMPTY);
      setDone(`Created the rule ${rule.name}.`);
      onCreated();
    }
  };

  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-labelledby="create-rule-title" aria-describedby={allowed.allowed ? undefined : 'create-rule-reason'}>
      <h2 id="create-rule-title">Create a rule</h2>
      <Reason id="create-rule-reason" permission={allowed} what="Creating rules" />
      <div className="form-row">
        <label>
          Name
          <input value={form.name} onChange={(e) => set('name', e.target.value)} required maxLength={200} disabled={disabled} />
        </label>
        <label>
          Project
          <select value={form.projectId} onChange={(e) => set('projectId', e.target.value)} disabled={disabled}>
            <ProjectOptions projects={projects} empty="Every project" />
          </select>
        </label>
      </div>
      <fieldset className="form-row" disabled={disabled}>
        <legend>Failure types (any of)</legend>
        {Object.entries(FAILURE_TYPES).map(([value, label]) => (
          <label className="check" key={value}>
            <input
              type="checkbox"
              checked={form.types.includes(value as FailureType)}
              onChange={(e) => set('types', e.target.checked ? [...form.types, value as FailureType] : form.types.filter((t) => t !== value))}
            />
            {label}
          </label>
        ))}
      </fieldset>
      <div className="form-row">
        <label>
          Error contains
          <input value={form.errorContains} onChange={(e) => set('errorContains', e.target.value)} maxLength={500} disabled={disabled} />
        </label>
        <label>
          Error matches (regex)
          <input value={form.errorRegex} onChange={(e) => set('errorRegex', e.target.value)} maxLength={500} disabled={disabled} />
        </label>
        <label>
          HTTP status codes
          <input value={form.statusCodes} onChange={(e) => set('statusCodes', e.target.value)} placeholder="500, 503" pattern="[0-9,\s]*" disabled={disabled} />
        </label>
        <label>
          Latency over (ms)
          <input type="number" min={0} step={1} value={form.latencyOver} onChange={(e) => set('latencyOver', e.target.value)} disabled={disabled} />
        </label>
        <label>
          Model (exact)
          <input value={form.model} onChange={(e) => set('model', e.target.value)} maxLength={200} disabled={disabled} />
        </label>
        <label>
          Span name (exact)
          <input value={form.spanName} onChange={(e) => set('spanName', e.target.value)} maxLength={1000} disabled={disabled} />
        </label>
        <button type="submit" className="primary" disabled={disabled}>
          {create.busy ? 'Creating…' : 'Create rule'}
        </button>
      </div>
      <p role="status" className="hint">
        {done}
      </p>
      {create.error !== undefined && <ErrorNotice error={create.error} />}
    </form>
  );
}

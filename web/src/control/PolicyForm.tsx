import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { ProjectOptions, useAllProjects } from '../admin/projects';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';
import { FormFooter } from '../ui/editing';
import { jsonText, parseJson, parseObjects, type Policy, type PolicyBody, type PolicyStep, type PolicyTrigger } from './config';

/** A cap typed in a number input: undefined when empty (the API's default on create). */
const cap = (text: string): number | undefined => (text.trim() === '' ? undefined : Number(text));

/** Create a policy, or edit one (PATCH; trigger and steps are replaced as a whole). */
export function PolicyForm({ policy, onSaved, onCancel }: { policy: Policy | null; onSaved: (message: string) => void; onCancel: () => void }) {
  const allowed = usePermission(policy ? 'PATCH /v1/policies/{id}' : 'POST /v1/policies');
  const projects = useAllProjects();
  const save = useAction();
  const [name, setName] = useState(policy?.name ?? '');
  const [projectId, setProjectId] = useState(policy?.project_id ?? '');
  const [trigger, setTrigger] = useState(policy ? jsonText(policy.trigger) : '');
  const [steps, setSteps] = useState(policy ? jsonText(policy.steps) : '');
  const [retryDepth, setRetryDepth] = useState(policy ? String(policy.max_retry_depth) : '');
  const [cascadeDepth, setCascadeDepth] = useState(policy ? String(policy.max_cascade_depth) : '');
  const [enabled, setEnabled] = useState(policy?.enabled ?? true);
  const [requireApproval, setRequireApproval] = useState(policy?.require_approval ?? false);
  const [invalid, setInvalid] = useState('');
  const disabled = !allowed.allowed || save.busy !== null;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setInvalid('');
    const parsedTrigger = parseJson(trigger, 'object');
    const parsedSteps = parseObjects(steps);
    if (parsedTrigger instanceof Error) return setInvalid(`Trigger: ${parsedTrigger.message}.`);
    if (parsedSteps instanceof Error) return setInvalid(`Steps: ${parsedSteps.message}.`);
    const body: PolicyBody = {
      name,
      project_id: projectId,
      enabled,
      trigger: parsedTrigger as PolicyTrigger,
      steps: parsedSteps as PolicyStep[],
      require_approval: requireApproval,
      ...(cap(retryDepth) !== undefined ? { max_retry_depth: cap(retryDepth) } : {}),
      ...(cap(cascadeDepth) !== undefined ? { max_cascade_depth: cap(cascadeDepth) } : {}),
    };
    const saved = await save.run('save', () =>
      policy ? unwrap(api.PATCH('/v1/policies/{id}', { params: { path: { id: policy.id } }, body })) : unwrap(api.POST('/v1/policies', { body })),
    );
    if (saved) onSaved(policy ? `Saved ${saved.name}.` : `Created ${saved.name}.`);
  };

  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-labelledby="policy-form-title" aria-describedby={allowed.allowed ? undefined : 'policy-form-reason'}>
      <h2 id="policy-form-title">{policy ? `Edit ${policy.name}` : 'Create a policy'}</h2>
      <Reason id="policy-form-reason" permission={allowed} what={policy ? 'Editing policies' : 'Creating policies'} />
      <div className="form-row">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} disabled={disabled} />
        </label>
        <label>
          Project
          <select value={projectId} onChange={(e) => setProjectId(e.target.value)} required disabled={disabled}>
            <ProjectOptions projects={projects.data} empty="Choose a project" />
          </select>
        </label>
      </div>
      <label>
        Trigger (JSON object: failure_types, cluster_signature and/or eval_rule_id)
        <textarea rows={3} value={trigger} onChange={(e) => setTrigger(e.target.value)} required placeholder='{"failure_types": ["Timeout"]}' disabled={disabled} />
      </label>
      <label>
        Steps, in order (JSON array: retry, fallback_model with model_route_id, prompt_modification with instruction, escalate)
        <textarea rows={4} value={steps} onChange={(e) => setSteps(e.target.value)} required placeholder='[{"type": "retry"}, {"type": "escalate"}]' disabled={disabled} />
      </label>
      <div className="form-row">
        <label>
          Max retry depth (1–10)
          <input type="number" min={1} max={10} step={1} value={retryDepth} onChange={(e) => setRetryDepth(e.target.value)} placeholder="3" disabled={disabled} />
        </label>
        <label>
          Max cascade depth (1–20)
          <input type="number" min={1} max={20} step={1} value={cascadeDepth} onChange={(e) => setCascadeDepth(e.target.value)} placeholder="5" disabled={disabled} />
        </label>
        <label className="check">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} disabled={disabled} />
          Enabled
        </label>
        <label className="check">
          <input type="checkbox" checked={requireApproval} onChange={(e) => setRequireApproval(e.target.checked)} disabled={disabled} />
          Require owner approval
        </label>
      </div>
      <p className="hint">Empty caps take the API's defaults (3 retries, cascade depth 5). See docs/control-loop.md for how a chain moves between steps.</p>
      <FormFooter
        editing={policy !== null}
        busy={save.busy !== null}
        disabled={disabled}
        createLabel="Create policy"
        saveLabel="Save policy"
        onCancel={onCancel}
        invalid={invalid}
        error={save.error}
      />
    </form>
  );
}

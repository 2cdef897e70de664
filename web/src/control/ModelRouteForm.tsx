import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { ProjectOptions, useAllProjects } from '../admin/projects';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';
import { FormFooter } from '../ui/editing';
import { MODEL_PROVIDERS, jsonText, parseObjects, type ModelProvider, type ModelRef, type ModelRoute, type RouteBody } from './config';

/** Create a model route, or edit one (PATCH; fallbacks are replaced as a whole). */
export function ModelRouteForm({ route, onSaved, onCancel }: { route: ModelRoute | null; onSaved: (message: string) => void; onCancel: () => void }) {
  const allowed = usePermission(route ? 'PATCH /v1/model-routes/{id}' : 'POST /v1/model-routes');
  const projects = useAllProjects();
  const save = useAction();
  const [name, setName] = useState(route?.name ?? '');
  const [projectId, setProjectId] = useState(route?.project_id ?? '');
  const [provider, setProvider] = useState<ModelProvider>(route?.model.provider ?? 'openai');
  const [model, setModel] = useState(route?.model.model ?? '');
  const [fallbacks, setFallbacks] = useState(route && route.fallbacks.length > 0 ? jsonText(route.fallbacks) : '');
  const [invalid, setInvalid] = useState('');
  const disabled = !allowed.allowed || save.busy !== null;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setInvalid('');
    const parsedFallbacks = fallbacks.trim() === '' ? [] : parseObjects(fallbacks);
    if (parsedFallbacks instanceof Error) return setInvalid(`Fallbacks: ${parsedFallbacks.message}.`);
    const body: RouteBody = { name, project_id: projectId || null, model: { provider, model }, fallbacks: parsedFallbacks as ModelRef[] };
    const saved = await save.run('save', () =>
      route ? unwrap(api.PATCH('/v1/model-routes/{id}', { params: { path: { id: route.id } }, body })) : unwrap(api.POST('/v1/model-routes', { body })),
    );
    if (saved) onSaved(route ? `Saved ${saved.name}.` : `Created ${saved.name}.`);
  };

  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-labelledby="route-form-title" aria-describedby={allowed.allowed ? undefined : 'route-form-reason'}>
      <h2 id="route-form-title">{route ? `Edit ${route.name}` : 'Create a model route'}</h2>
      <Reason id="route-form-reason" permission={allowed} what={route ? 'Editing model routes' : 'Creating model routes'} />
      <div className="form-row">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} disabled={disabled} />
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
          Provider
          <select value={provider} onChange={(e) => setProvider(e.target.value as ModelProvider)} disabled={disabled}>
            {Object.entries(MODEL_PROVIDERS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Model
          <input value={model} onChange={(e) => setModel(e.target.value)} required maxLength={200} placeholder="gpt-4o-mini" disabled={disabled} />
        </label>
      </div>
      <label>
        Fallbacks, in order (JSON array of {'{"provider", "model"}'}, up to 10, optional)
        <textarea rows={3} value={fallbacks} onChange={(e) => setFallbacks(e.target.value)} placeholder='[{"provider": "openai", "model": "gpt-4o"}]' disabled={disabled} />
      </label>
      <FormFooter
        editing={route !== null}
        busy={save.busy !== null}
        disabled={disabled}
        createLabel="Create model route"
        saveLabel="Save model route"
        onCancel={onCancel}
        invalid={invalid}
        error={save.error}
      />
    </form>
  );
}

import { useEffect } from 'react';
import { api, noContent, unwrap, type Ok } from '../api/client';
import { EditableTable } from '../ui/EditableTable';
import { useRowDelete } from '../ui/RowActions';
import { formatTime } from '../traces/format';
import { useEditor } from '../ui/editing';
import type { ModelRoute, Policy } from './config';
import { ControlNav } from './ControlNav';
import { ModelRouteForm } from './ModelRouteForm';
import { PolicyForm } from './PolicyForm';
import { usePages } from '../api/usePages';

type PolicyList = Ok<'/v1/policies'>;
type RouteList = Ok<'/v1/model-routes'>;

/** The trigger and steps as the API stores them, one readable line each. */
const describe = (value: Record<string, unknown>): string =>
  Object.entries(value)
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : String(v)}`)
    .join('; ');
const modelName = (m: ModelRoute['model']) => `${m.provider}/${m.model}`;

export function PoliciesPage() {
  const editor = useEditor((item: Policy) => item.updated_at);
  const deleter = useRowDelete('DELETE /v1/policies/{id}', { reasonId: 'delete-policy-reason', what: 'Deleting policies', reload: editor.reload });
  const list = usePages(`policies:${editor.version}`, (cursor, signal) => unwrap(api.GET('/v1/policies', { params: { query: { limit: 50, cursor } }, signal })), (p: PolicyList) => p.policies);
  useEffect(() => {
    document.title = 'Policies · Looptrace';
  }, []);
  return (
    <>
      <h1>Control loop: policies</h1>
      <ControlNav />
      <p className="hint">What starts a remediation chain, the steps it tries in order and its caps (docs/control-loop.md).</p>
      <PolicyForm key={editor.formKey} policy={editor.editing} onSaved={editor.onSaved} onCancel={editor.onCancel} />
      {editor.status}
      <h2>Policies</h2>
      <EditableTable
        list={list}
        loading="Loading policies…"
        empty={<p>No policies yet.</p>}
        caption="Remediation policies"
        columns={['Name', 'Enabled', 'Trigger', 'Steps', 'Caps', 'Approval', 'Updated']}
        deleter={deleter}
        cells={(p: Policy) => (
          <>
            <th scope="row">{p.name}</th>
            <td>{p.enabled ? 'yes' : 'no'}</td>
            <td>{describe(p.trigger)}</td>
            <td>
              <ol className="steps">
                {p.steps.map((s, i) => (
                  <li key={i}>{describe(s)}</li>
                ))}
              </ol>
            </td>
            <td>
              {p.max_retry_depth} retries, depth {p.max_cascade_depth}
            </td>
            <td>{p.require_approval ? 'owner approves' : 'runs at once'}</td>
            <td>{formatTime(p.updated_at)}</td>
          </>
        )}
        actions={(p) => ({
          subject: p.name,
          onEdit: () => editor.edit(p),
          question: 'Its chains stop; its actions stay.',
          call: () => noContent(api.DELETE('/v1/policies/{id}', { params: { path: { id: p.id } } })),
        })}
      />
    </>
  );
}

export function ModelRoutesPage() {
  const editor = useEditor((item: ModelRoute) => item.updated_at);
  const deleter = useRowDelete('DELETE /v1/model-routes/{id}', { reasonId: 'delete-route-reason', what: 'Deleting model routes', reload: editor.reload });
  const list = usePages(`model-routes:${editor.version}`, (cursor, signal) => unwrap(api.GET('/v1/model-routes', { params: { query: { limit: 50, cursor } }, signal })), (p: RouteList) => p.model_routes);
  useEffect(() => {
    document.title = 'Model routes · Looptrace';
  }, []);
  return (
    <>
      <h1>Control loop: model routes</h1>
      <ControlNav />
      <p className="hint">A model and the fallbacks that fallback_model steps try in order.</p>
      <ModelRouteForm key={editor.formKey} route={editor.editing} onSaved={editor.onSaved} onCancel={editor.onCancel} />
      {editor.status}
      <h2>Model routes</h2>
      <EditableTable
        list={list}
        loading="Loading model routes…"
        empty={<p>No model routes yet.</p>}
        caption="Model routes"
        columns={['Name', 'Model', 'Fallbacks, in order', 'Project', 'Updated']}
        deleter={deleter}
        cells={(r: ModelRoute) => (
          <>
            <th scope="row">{r.name}</th>
            <td>{modelName(r.model)}</td>
            <td>{r.fallbacks.length === 0 ? <span className="muted">none</span> : r.fallbacks.map(modelName).join(' → ')}</td>
            <td>{r.project_id ? <code>{r.project_id}</code> : 'every project'}</td>
            <td>{formatTime(r.updated_at)}</td>
          </>
        )}
        actions={(r) => ({
          subject: r.name,
          onEdit: () => editor.edit(r),
          question: 'fallback_model steps naming it stop finding models.',
          call: () => noContent(api.DELETE('/v1/model-routes/{id}', { params: { path: { id: r.id } } })),
        })}
      />
    </>
  );
}

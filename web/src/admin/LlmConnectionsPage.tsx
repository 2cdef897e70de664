import { useEffect, useState, type FormEvent } from 'react';
import { api, noContent, unwrap, type Ok } from '../api/client';
import type { paths } from '../api/schema';
import { usePages } from '../api/usePages';
import { MODEL_PROVIDERS, type ModelProvider } from '../control/config';
import { formatTime } from '../traces/format';
import { FormFooter, useEditor } from '../ui/editing';
import { EditableTable } from '../ui/EditableTable';
import { useRowDelete } from '../ui/RowActions';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';

type ConnectionList = Ok<'/v1/llm-connections'>;
type Connection = ConnectionList['llm_connections'][number];
type CreateConnection = NonNullable<paths['/v1/llm-connections']['post']['requestBody']>['content']['application/json'];

/**
 * The tenant's own credentials for LLM vendors (GET /v1/llm-connections): what judge evaluators,
 * dataset runs and the control loop call with. Keys are write-only: the API returns their last
 * four characters, and this page never holds one after sending it.
 */
export function LlmConnectionsPage() {
  const editor = useEditor((connection: Connection) => connection.created_at);
  const list = usePages(
    `llm-connections:${editor.version}`,
    (cursor, signal) => unwrap(api.GET('/v1/llm-connections', { params: { query: { limit: 100, cursor } }, signal })),
    (page: ConnectionList) => page.llm_connections,
  );
  const deleter = useRowDelete('DELETE /v1/llm-connections/{id}', { reasonId: 'delete-connection-reason', what: 'Removing connections', reload: editor.reload });
  useEffect(() => {
    document.title = 'LLM connections · Looptrace';
  }, []);

  return (
    <>
      <h1>LLM connections</h1>
      <p className="hint">
        Your own keys for OpenAI and Anthropic: every model call Looptrace makes for you (judge evaluators, dataset runs, the control loop, prompt proposals) uses the
        newest connection of its provider, else the server&apos;s default key if the operator set one. Keys are stored encrypted and never shown again.
      </p>
      <CreateConnectionForm key={editor.formKey} onSaved={editor.onSaved} />
      {editor.status}
      <h2>Connections</h2>
      <EditableTable
        list={list}
        loading="Loading the connections…"
        empty={<p>No LLM connections yet: calls use the server&apos;s default key, if any.</p>}
        caption="LLM connections of this tenant, oldest first"
        className="admin"
        columns={['Name', 'Provider', 'Endpoint', 'Key', 'Default model', 'Created']}
        deleter={deleter}
        cells={(connection) => (
          <>
            <td>{connection.name}</td>
            <td>{MODEL_PROVIDERS[connection.provider]}</td>
            <td>{connection.base_url ? <code>{connection.base_url}</code> : <span className="muted">the vendor&apos;s own</span>}</td>
            <td>
              <code aria-label={`ending in ${connection.api_key_last4}`}>••••{connection.api_key_last4}</code>
            </td>
            <td>{connection.default_model ?? <span className="muted">the caller&apos;s</span>}</td>
            <td>{formatTime(connection.created_at)}</td>
          </>
        )}
        actions={(connection) => ({
          subject: connection.name,
          action: 'Remove',
          confirmLabel: 'Remove now',
          question: "Calls fall back to an older connection of this provider, or the server's default.",
          call: () => noContent(api.DELETE('/v1/llm-connections/{id}', { params: { path: { id: connection.id } } })),
        })}
      />
    </>
  );
}

function CreateConnectionForm({ onSaved }: { onSaved: (message: string) => void }) {
  const allowed = usePermission('POST /v1/llm-connections');
  const save = useAction();
  const [provider, setProvider] = useState<ModelProvider>('openai');
  const [name, setName] = useState('');
  const [baseUrl, setBaseUrl] = useState('');
  const [apiKey, setApiKey] = useState('');
  const [defaultModel, setDefaultModel] = useState('');
  const disabled = !allowed.allowed || save.busy !== null;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const optional = (key: 'name' | 'base_url' | 'default_model', value: string) => (value.trim() === '' ? {} : { [key]: value.trim() });
    const body: CreateConnection = { provider, api_key: apiKey, ...optional('name', name), ...optional('base_url', baseUrl), ...optional('default_model', defaultModel) };
    const created = await save.run('save', () => unwrap(api.POST('/v1/llm-connections', { body })));
    // The key leaves this page's memory either way once the form remounts on success.
    if (created) onSaved(`Added ${created.name} (key ending in ${created.api_key_last4}).`);
  };

  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-label="Add an LLM connection" aria-describedby={allowed.allowed ? undefined : 'connection-form-reason'}>
      <h2>Add an LLM connection</h2>
      <Reason id="connection-form-reason" permission={allowed} what="Adding connections" />
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
          Name (optional)
          <input value={name} onChange={(e) => setName(e.target.value)} maxLength={200} placeholder={provider} disabled={disabled} />
        </label>
        <label>
          API key
          <input type="password" autoComplete="off" value={apiKey} onChange={(e) => setApiKey(e.target.value)} required maxLength={500} disabled={disabled} />
        </label>
      </div>
      <div className="form-row">
        <label>
          Endpoint (optional; https, an OpenAI-compatible or Anthropic API)
          <input type="url" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} maxLength={2000} placeholder="the vendor's own" disabled={disabled} />
        </label>
        <label>
          Default model (optional)
          <input value={defaultModel} onChange={(e) => setDefaultModel(e.target.value)} maxLength={200} placeholder={provider === 'openai' ? 'gpt-4o-mini' : 'claude-3-5-haiku'} disabled={disabled} />
        </label>
      </div>
      <FormFooter editing={false} busy={save.busy !== null} disabled={disabled} createLabel="Add connection" error={save.error} />
    </form>
  );
}

import { useEffect, useReducer, useRef, useState, type FormEvent } from 'react';
import { api, unwrap, type Ok } from '../api/client';
import { useApi } from '../api/useApi';
import { formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { ProjectOptions, useAllProjects, type Project } from './projects';
import { RowActions, useRowDelete } from '../ui/RowActions';
import { Reason, usePermission } from '../ui/permission';
import { personName } from './people';
import { useAction } from '../ui/useAction';

type ApiKey = Ok<'/v1/apikeys'>[number];
type Created = NonNullable<Awaited<ReturnType<typeof createKey>>>;

const createKey = (body: { name: string; scopes?: 'query'[]; project_id?: string }) => unwrap(api.POST('/v1/apikeys', { body }));

const scopeLabel = (scopes: string[] | null) => (scopes === null || scopes.length === 0 ? 'full access' : scopes.join(', ') + ' only');

export function ApiKeysPage() {
  const [version, reload] = useReducer((n: number) => n + 1, 0);
  const keys = useApi(`apikeys:${version}`, (signal) => unwrap(api.GET('/v1/apikeys', { signal })));
  const projects = useAllProjects();
  // The secret lives in this page's state only: leaving the page or reloading it forgets it.
  const [created, setCreated] = useState<Created | null>(null);
  const revoke = useRowDelete('DELETE /v1/apikeys/{id}', { reasonId: 'revoke-reason', what: 'Revoking keys', reload });
  useEffect(() => {
    document.title = 'API keys · Looptrace';
  }, []);

  const projectName = (id: string) => projects.data?.find((p) => p.id === id)?.name ?? id;

  return (
    <>
      <h1>API keys</h1>
      <p className="hint">Keys authenticate ingest and API calls. A key&apos;s secret is shown once, when it is created; the API keeps only its digest.</p>
      {created ? (
        <NewSecret created={created} onDone={() => setCreated(null)} />
      ) : (
        <CreateKeyForm
          projects={projects.data?.filter((p) => p.status === 'active') ?? []}
          onCreated={(key) => {
            setCreated(key);
            reload();
          }}
        />
      )}
      <h2>Keys</h2>
      {revoke.reason}
      {revoke.error}
      {keys.error !== undefined && <ErrorNotice error={keys.error} />}
      {keys.loading && <p aria-live="polite">Loading the keys…</p>}
      {keys.data?.length === 0 && <p>No API keys yet.</p>}
      {keys.data && keys.data.length > 0 && (
        <table className="admin">
          <caption className="visually-hidden">API keys of this tenant, revoked ones included</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Prefix</th>
              <th scope="col">Project</th>
              <th scope="col">Scopes</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {keys.data.map((key: ApiKey) => (
              <tr key={key.id}>
                <td>{key.name}</td>
                <td>
                  <code>{key.prefix}…</code>
                </td>
                <td>{projectName(key.project_id)}</td>
                <td>{scopeLabel(key.scopes)}</td>
                <td>
                  {formatTime(key.created_at)}
                  {key.created_by_user_id && <span className="muted"> by {personName({ email: key.created_by_email, first_name: key.created_by_first_name, last_name: key.created_by_last_name }, 'a user')}</span>}
                </td>
                <td>{key.last_used_at ? formatTime(key.last_used_at) : 'never'}</td>
                <td>
                  {key.revoked_at ? (
                    <span className="badge error">revoked {formatTime(key.revoked_at)}</span>
                  ) : (
                    <>
                      <span className="badge ok">active</span>{' '}
                      <RowActions
                        id={key.id}
                        subject={key.name}
                        deleter={revoke}
                        action="Revoke"
                        confirmLabel="Revoke now"
                        question={`Revoke ${key.name}? Calls with it stop working.`}
                        call={() => unwrap(api.DELETE('/v1/apikeys/{id}', { params: { path: { id: key.id } } }))}
                      />
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function CreateKeyForm({ projects, onCreated }: { projects: Project[]; onCreated: (key: Created) => void }) {
  const allowed = usePermission('POST /v1/apikeys');
  const create = useAction();
  const [name, setName] = useState('');
  const [queryOnly, setQueryOnly] = useState(false);
  const [projectId, setProjectId] = useState('');
  const disabled = !allowed.allowed || create.busy !== null;
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const key = await create.run('create', () => createKey({ name, ...(queryOnly ? { scopes: ['query'] } : {}), ...(projectId ? { project_id: projectId } : {}) }));
    if (key) {
      setName('');
      setQueryOnly(false);
      onCreated(key);
    }
  };
  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-labelledby="create-key-title" aria-describedby={allowed.allowed ? undefined : 'create-key-reason'}>
      <h2 id="create-key-title">Create a key</h2>
      <Reason id="create-key-reason" permission={allowed} what="Creating keys" />
      <div className="form-row">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} disabled={disabled} />
        </label>
        <label>
          Project (default for ingest)
          <select value={projectId} onChange={(e) => setProjectId(e.target.value)} disabled={disabled}>
            <ProjectOptions projects={projects} empty="The first active project" />
          </select>
        </label>
        <label className="check">
          <input type="checkbox" checked={queryOnly} onChange={(e) => setQueryOnly(e.target.checked)} disabled={disabled} />
          Query scope only (reads traces, sessions, metrics, projects; no ingest, no key management)
        </label>
        <button type="submit" className="primary" disabled={disabled}>
          {create.busy ? 'Creating…' : 'Create key'}
        </button>
      </div>
      {create.error !== undefined && <ErrorNotice error={create.error} />}
    </form>
  );
}

/** The new key's secret, this once: with a copy button whose outcome is announced. */
function NewSecret({ created, onDone }: { created: Created; onDone: () => void }) {
  const [copied, setCopied] = useState('');
  const title = useRef<HTMLHeadingElement>(null);
  useEffect(() => title.current?.focus(), []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(created.secret);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('Could not copy: select the secret and copy it by hand.');
    }
  };
  return (
    <section className="card secret" aria-labelledby="secret-title">
      <h2 id="secret-title" tabIndex={-1} ref={title}>
        Key &ldquo;{created.name}&rdquo; created
      </h2>
      <p>
        <strong>Copy its secret now: it is shown only this once.</strong> Leaving or reloading this page forgets it.
      </p>
      <p className="secret-value">
        Secret: <code>{created.secret}</code>
      </p>
      <p className="secret-actions">
        <button type="button" className="primary" onClick={() => void copy()}>
          Copy secret
        </button>
        <button type="button" onClick={onDone}>
          Done
        </button>
        <span role="status" className="hint">
          {copied}
        </span>
      </p>
    </section>
  );
}

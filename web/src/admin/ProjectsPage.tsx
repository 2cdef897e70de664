import { ListState, LoadMore } from '../ui/lists';
import { useEffect, useReducer, useState, type FormEvent } from 'react';
import { useSearchParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import type { Project } from './projects';
import { Reason, useFieldPermission, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';
import { usePages } from '../api/usePages';

type Status = 'active' | 'archived' | 'all';
const STATUSES: Status[] = ['all', 'active', 'archived'];

export function ProjectsPage() {
  const [params, setParams] = useSearchParams();
  const status = (STATUSES as string[]).includes(params.get('status') ?? '') ? (params.get('status') as Status) : 'all';
  const [version, reload] = useReducer((n: number) => n + 1, 0);
  const list = usePages(
    `projects:${status}:${version}`,
    (cursor, signal) => unwrap(api.GET('/v1/projects', { params: { query: { status, limit: 100, cursor } }, signal })),
    (page) => page.projects,
  );
  const change = useAction();
  const mayPatch = usePermission('PATCH /v1/projects/{id}');
  const mayArchive = usePermission('POST /v1/projects/{id}/archive');
  const mayRetain = useFieldPermission('PATCH /v1/projects/{id}', 'retention_days');
  useEffect(() => {
    document.title = 'Projects · Looptrace';
  }, []);

  const patch = (project: Project, body: { prompt_autoship_enabled?: boolean; retention_days?: number | null }) =>
    void change.run(project.id, () => unwrap(api.PATCH('/v1/projects/{id}', { params: { path: { id: project.id } }, body }))).then((done) => done && reload());
  const archive = (project: Project) =>
    void change
      .run(project.id, () =>
        project.status === 'active'
          ? unwrap(api.POST('/v1/projects/{id}/archive', { params: { path: { id: project.id } } }))
          : unwrap(api.POST('/v1/projects/{id}/unarchive', { params: { path: { id: project.id } } })),
      )
      .then((done) => done && reload());

  return (
    <>
      <h1>Projects</h1>
      <CreateProjectForm onCreated={reload} />
      <h2>Projects</h2>
      <label className="inline-label">
        Show
        <select value={status} onChange={(e) => setParams(e.target.value === 'all' ? {} : { status: e.target.value })}>
          <option value="all">active and archived</option>
          <option value="active">active only</option>
          <option value="archived">archived only</option>
        </select>
      </label>
      <Reason id="archive-reason" permission={mayArchive} what="Archiving" />
      <Reason id="autoship-reason" permission={mayPatch} what="Changing prompt auto-ship" />
      <Reason id="retention-reason" permission={mayRetain} what="Changing retention" />
      {change.error !== undefined && <ErrorNotice error={change.error} />}
      <ListState list={list} loading="Loading the projects…" empty={<p>No projects here.</p>} />
      {list.items.length > 0 && (
        <table className="admin">
          <caption className="visually-hidden">Projects of this tenant</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Retention</th>
              <th scope="col">Prompt auto-ship</th>
              <th scope="col">Created</th>
              <th scope="col">Archive</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((project) => (
              <tr key={project.id}>
                <td>
                  {project.name}
                  <div className="muted">
                    <code>{project.id}</code>
                  </div>
                </td>
                <td>
                  <span className={`badge ${project.status === 'active' ? 'ok' : 'neutral'}`}>{project.status}</span>
                  {project.archived_at && <div className="muted">{formatTime(project.archived_at)}</div>}
                </td>
                <td>
                  <RetentionForm
                    key={String(project.retention_days)}
                    project={project}
                    disabled={!mayRetain.allowed || change.busy !== null}
                    describedBy={mayRetain.allowed ? undefined : 'retention-reason'}
                    onSave={(days) => patch(project, { retention_days: days })}
                  />
                </td>
                <td>
                  <label className="check">
                    <input
                      type="checkbox"
                      aria-label={`Prompt auto-ship for ${project.name}`}
                      checked={project.prompt_autoship_enabled}
                      disabled={!mayPatch.allowed || change.busy !== null}
                      aria-describedby={mayPatch.allowed ? undefined : 'autoship-reason'}
                      onChange={(e) => patch(project, { prompt_autoship_enabled: e.target.checked })}
                    />
                    <span aria-hidden="true">{project.prompt_autoship_enabled ? 'on' : 'off'}</span>
                  </label>
                </td>
                <td>{formatTime(project.created_at)}</td>
                <td>
                  <button
                    type="button"
                    disabled={!mayArchive.allowed || change.busy !== null}
                    aria-describedby={mayArchive.allowed ? undefined : 'archive-reason'}
                    onClick={() => archive(project)}
                  >
                    {project.status === 'active' ? 'Archive' : 'Unarchive'}
                    <span className="visually-hidden"> {project.name}</span>
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={list} />
      <p className="hint">Archiving refuses ingest into a project until it is unarchived. Shortening retention removes the traces older than it.</p>
    </>
  );
}

/** Days to keep traces (1 to 3650); empty keeps them forever. */
function RetentionForm({ project, disabled, describedBy, onSave }: { project: Project; disabled: boolean; describedBy?: string; onSave: (days: number | null) => void }) {
  const [days, setDays] = useState(project.retention_days === null ? '' : String(project.retention_days));
  const value = days.trim() === '' ? null : Number(days);
  return (
    <form
      className="inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        onSave(value);
      }}
    >
      <input
        type="number"
        min={1}
        max={3650}
        className="days"
        aria-label={`Retention days of ${project.name} (empty: keep forever)`}
        placeholder="forever"
        value={days}
        onChange={(e) => setDays(e.target.value)}
        disabled={disabled}
        aria-describedby={describedBy}
      />
      <span className="muted">days</span>
      <button type="submit" disabled={disabled || value === project.retention_days} aria-describedby={describedBy}>
        Save<span className="visually-hidden"> retention of {project.name}</span>
      </button>
    </form>
  );
}

function CreateProjectForm({ onCreated }: { onCreated: () => void }) {
  const allowed = usePermission('POST /v1/projects');
  const create = useAction();
  const [name, setName] = useState('');
  const [done, setDone] = useState('');
  const disabled = !allowed.allowed || create.busy !== null;
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone('');
    const project = await create.run('create', () => unwrap(api.POST('/v1/projects', { body: { name } })));
    if (project) {
      setDone(`Created ${project.name}.`);
      setName('');
      onCreated();
    }
  };
  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-labelledby="create-project-title" aria-describedby={allowed.allowed ? undefined : 'create-project-reason'}>
      <h2 id="create-project-title">Create a project</h2>
      <Reason id="create-project-reason" permission={allowed} what="Creating projects" />
      <div className="form-row">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} disabled={disabled} />
        </label>
        <button type="submit" className="primary" disabled={disabled}>
          {create.busy ? 'Creating…' : 'Create project'}
        </button>
      </div>
      <p role="status" className="hint">
        {done}
      </p>
      {create.error !== undefined && <ErrorNotice error={create.error} />}
    </form>
  );
}

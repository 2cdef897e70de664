import { ListState, LoadMore } from '../ui/lists';
import { useReducer, useState, type FormEvent } from 'react';
import { ConfirmButton } from '../ui/ConfirmButton';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';
import { usePages } from '../api/usePages';
import { api, noContent, unwrap, type Ok } from '../api/client';
import { canChange } from '../api/permissions';
import type { Project } from '../admin/projects';
import { useMe } from '../shell/MeContext';
import { ErrorNotice } from '../ui/ErrorNotice';
import { filtersFromParams, filtersToParams, type TraceFilters } from './filters';

type SavedFilter = Ok<'/v1/saved-filters'>['items'][number];

/** A saved filter's stored JSON back to the filters this page knows (anything else is dropped, as from a URL). */
function storedToFilters(stored: Record<string, unknown>): TraceFilters {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(stored)) if (typeof value === 'string' || typeof value === 'number') params.set(key, String(value));
  return filtersFromParams(params);
}

const describe = (filters: TraceFilters): string =>
  Object.entries(filters)
    .filter(([key]) => key !== 'project_id')
    .map(([key, value]) => `${key}=${String(value)}`)
    .join(', ') || 'no filters';

/**
 * The tenant's saved filters of the traces list (every member sees them all): save the current
 * filters under a name, load one (it becomes the URL), replace or delete one (its author or an owner).
 */
export function SavedFilters({ filters, projects, onLoad }: { filters: TraceFilters; projects: Project[] | undefined; onLoad: (filters: TraceFilters) => void }) {
  const me = useMe();
  const [version, reload] = useReducer((n: number) => n + 1, 0);
  const list = usePages(
    `saved-filters:${version}`,
    (cursor, signal) => unwrap(api.GET('/v1/saved-filters', { params: { query: { limit: 100, cursor } }, signal })),
    (page) => page.items,
  );
  const projectName = (id: string) => projects?.find((p) => p.id === id)?.name ?? id;
  const change = useAction();

  const replace = (saved: SavedFilter) =>
    void change
      .run(saved.id, () => unwrap(api.PATCH('/v1/saved-filters/{id}', { params: { path: { id: saved.id } }, body: { filters: Object.fromEntries(filtersToParams(filters)) } })))
      .then((done) => done && reload());
  const remove = (saved: SavedFilter) =>
    void change
      .run(saved.id, () => noContent(api.DELETE('/v1/saved-filters/{id}', { params: { path: { id: saved.id } } })))
      .then((done) => done && reload());

  return (
    <section className="card saved-filters" aria-labelledby="saved-filters-title">
      <h2 id="saved-filters-title">Saved filters</h2>
      <ListState list={list} loading="Loading the saved filters…" empty={<p className="muted">No saved filters yet.</p>} />
      {list.items.length > 0 && (
        <ul className="saved-filter-list">
          {list.items.map((saved) => {
            // The API lets the author or an owner change a saved filter (x-author-only); say so ahead.
            const patch = canChange(me, 'PATCH /v1/saved-filters/{id}', saved);
            const del = canChange(me, 'DELETE /v1/saved-filters/{id}', saved);
            const reasonId = `saved-filter-reason-${saved.id}`;
            const reason = !patch.allowed ? patch.reason : !del.allowed ? del.reason : null;
            return (
              <li key={saved.id}>
                <button type="button" onClick={() => onLoad(storedToFilters(saved.filters))}>
                  Load <strong>{saved.name}</strong>
                </button>{' '}
                <span className="muted">
                  {projectName(saved.project_id)} · {describe(storedToFilters(saved.filters))}
                </span>{' '}
                <button
                  type="button"
                  disabled={!patch.allowed || change.busy !== null}
                  aria-describedby={patch.allowed ? undefined : reasonId}
                  onClick={() => replace(saved)}
                >
                  Replace with current filters<span className="visually-hidden"> ({saved.name})</span>
                </button>{' '}
                <ConfirmButton
                  action="Delete" subject={saved.name}
                  confirmLabel="Delete it"
                  question={`Delete the saved filter ${saved.name}?`}
                  onConfirm={() => remove(saved)}
                  disabled={!del.allowed || change.busy !== null}
                  describedBy={del.allowed ? undefined : reasonId}
                />
                {reason && (
                  <span id={reasonId} className="hint reason">
                    {' '}
                    Changing it {reason}.
                  </span>
                )}
              </li>
            );
          })}
        </ul>
      )}
      <LoadMore list={list} label="Load more saved filters" />
      {change.error !== undefined && <ErrorNotice error={change.error} />}
      <SaveFilterForm filters={filters} projects={projects ?? []} onSaved={reload} />
    </section>
  );
}

function SaveFilterForm({ filters, projects, onSaved }: { filters: TraceFilters; projects: Project[]; onSaved: () => void }) {
  const allowed = usePermission('POST /v1/saved-filters');
  const save = useAction();
  const [name, setName] = useState('');
  const [chosenProject, setChosenProject] = useState('');
  const [done, setDone] = useState('');
  // A saved filter belongs to a project: the filter's own, else the one chosen here.
  const projectId = filters.project_id ?? (chosenProject || projects[0]?.id || '');
  const disabled = !allowed.allowed || save.busy !== null;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone('');
    const saved = await save.run('save', () =>
      unwrap(api.POST('/v1/saved-filters', { body: { project_id: projectId, name: name.trim(), filters: Object.fromEntries(filtersToParams(filters)) } })),
    );
    if (saved) {
      setDone(`Saved ${saved.name}.`);
      setName('');
      onSaved();
    }
  };

  return (
    <form className="admin-form" onSubmit={(e) => void submit(e)} aria-label="Save the current filters" aria-describedby={allowed.allowed ? undefined : 'save-filter-reason'}>
      <Reason id="save-filter-reason" permission={allowed} what="Saving filters" />
      <div className="form-row">
        <label>
          Name of the current filters
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} disabled={disabled} />
        </label>
        {filters.project_id === undefined && (
          <label>
            Save under project
            <select value={projectId} onChange={(e) => setChosenProject(e.target.value)} disabled={disabled}>
              {projects.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <button type="submit" disabled={disabled || projectId === ''}>
          {save.busy ? 'Saving…' : 'Save filters'}
        </button>
      </div>
      {save.error !== undefined && <ErrorNotice error={save.error} />}
      <p role="status" className="hint">
        {done}
      </p>
    </form>
  );
}

import { ListState, LoadMore } from '../ui/lists';
import { useReducer, useState, type FormEvent } from 'react';
import { ConfirmButton } from '../ui/ConfirmButton';
import { Dropdown } from '../ui/Popover';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';
import { usePages } from '../api/usePages';
import { api, noContent, unwrap, type Ok } from '../api/client';
import { canChange } from '../api/permissions';
import type { Project } from '../admin/projects';
import { useMe } from '../shell/MeContext';
import { ErrorNotice } from '../ui/ErrorNotice';
import { listStateFromParams, listStateToParams, type ListState as TraceListState } from './list/listState';

type SavedFilter = Ok<'/v1/saved-filters'>['items'][number];
/** What a saved filter holds: the list's filters, search and time range (not the peek, not live mode). */
export type Saved = Pick<TraceListState, 'filters' | 'range'>;

/** A saved filter's stored JSON back to the list's state (anything else is dropped, as from a URL). */
function storedToState(stored: Record<string, unknown>): Saved {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(stored)) if (typeof value === 'string' || typeof value === 'number') params.set(key, String(value));
  const { filters, range } = listStateFromParams(params);
  return { filters, range };
}

const toStored = (saved: Saved) => Object.fromEntries(listStateToParams({ ...saved, live: false }));

const describe = (saved: Saved): string =>
  Object.entries(toStored(saved))
    .filter(([key]) => key !== 'project_id')
    .map(([key, value]) => `${key}=${value}`)
    .join(', ') || 'no filters';

interface Props {
  current: Saved;
  projects: Project[] | undefined;
  onLoad: (saved: Saved) => void;
}

/**
 * The tenant's saved filters of the trace list (every member sees them all), in a dropdown: apply
 * one (it becomes the URL), save the current filters under a name, replace one with the current
 * filters or delete it (its author or an owner).
 */
export function SavedFilters(props: Props) {
  return (
    <Dropdown label="Saved filters" button="Saved filters" className="saved-filters align-end">
      {(close) => <SavedFilterList {...props} onLoad={(saved) => (close(), props.onLoad(saved))} />}
    </Dropdown>
  );
}

function SavedFilterList({ current, projects, onLoad }: Props) {
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
      .run(saved.id, () => unwrap(api.PATCH('/v1/saved-filters/{id}', { params: { path: { id: saved.id } }, body: { filters: toStored(current) } })))
      .then((done) => done && reload());
  const remove = (saved: SavedFilter) =>
    void change
      .run(saved.id, () => noContent(api.DELETE('/v1/saved-filters/{id}', { params: { path: { id: saved.id } } })))
      .then((done) => done && reload());

  return (
    <>
      <ListState list={list} loading="Loading the saved filters…" empty={<p className="muted">No saved filters yet.</p>} />
      {list.items.length > 0 && (
        <ul className="saved-filter-list">
          {list.items.map((saved) => {
            // The API lets the author or an owner change a saved filter (x-author-only); say so ahead.
            const patch = canChange(me, 'PATCH /v1/saved-filters/{id}', saved);
            const del = canChange(me, 'DELETE /v1/saved-filters/{id}', saved);
            const reasonId = `saved-filter-reason-${saved.id}`;
            const reason = !patch.allowed ? patch.reason : !del.allowed ? del.reason : null;
            const state = storedToState(saved.filters);
            return (
              <li key={saved.id}>
                <button type="button" onClick={() => onLoad(state)} aria-describedby={`saved-filter-what-${saved.id}`}>
                  Apply <strong>{saved.name}</strong>
                </button>
                <span id={`saved-filter-what-${saved.id}`} className="muted">
                  {projectName(saved.project_id)} · {describe(state)}
                </span>
                <button type="button" disabled={!patch.allowed || change.busy !== null} aria-describedby={patch.allowed ? undefined : reasonId} onClick={() => replace(saved)}>
                  Replace<span className="visually-hidden"> {saved.name}</span> with the current filters
                </button>
                <ConfirmButton
                  action="Delete"
                  subject={saved.name}
                  confirmLabel="Delete it"
                  question={`Delete ${saved.name}?`}
                  onConfirm={() => remove(saved)}
                  disabled={!del.allowed || change.busy !== null}
                  describedBy={del.allowed ? undefined : reasonId}
                />
                {reason && (
                  <span id={reasonId} className="hint reason">
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
      <SaveFilterForm current={current} projects={projects ?? []} onSaved={reload} />
    </>
  );
}

function SaveFilterForm({ current, projects, onSaved }: { current: Saved; projects: Project[]; onSaved: () => void }) {
  const allowed = usePermission('POST /v1/saved-filters');
  const save = useAction();
  const [name, setName] = useState('');
  const [chosenProject, setChosenProject] = useState('');
  const [done, setDone] = useState('');
  // A saved filter belongs to a project: the filter's own, else the one chosen here.
  const projectId = current.filters.project_id ?? (chosenProject || projects[0]?.id || '');
  const disabled = !allowed.allowed || save.busy !== null;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone('');
    const saved = await save.run('save', () => unwrap(api.POST('/v1/saved-filters', { body: { project_id: projectId, name: name.trim(), filters: toStored(current) } })));
    if (saved) {
      setDone(`Saved ${saved.name}.`);
      setName('');
      onSaved();
    }
  };

  return (
    <form className="save-filter" onSubmit={(e) => void submit(e)} aria-label="Save the current filters" aria-describedby={allowed.allowed ? undefined : 'save-filter-reason'}>
      <Reason id="save-filter-reason" permission={allowed} what="Saving filters" />
      <label>
        Name of the current filters
        <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} disabled={disabled} />
      </label>
      {current.filters.project_id === undefined && (
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
      {save.error !== undefined && <ErrorNotice error={save.error} />}
      <p role="status" className="hint">
        {done}
      </p>
    </form>
  );
}

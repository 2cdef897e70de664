import { ListState, LoadMore } from '../ui/lists';
import { useEffect, useReducer, useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { api, unwrap } from '../api/client';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';
import { usePages } from '../api/usePages';
import { formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';

export function DatasetsPage() {
  const [version, reload] = useReducer((n: number) => n + 1, 0);
  const list = usePages(
    `datasets:${version}`,
    (cursor, signal) => unwrap(api.GET('/v1/datasets', { params: { query: { limit: 100, cursor } }, signal })),
    (page) => page.datasets,
  );
  useEffect(() => {
    document.title = 'Datasets · Looptrace';
  }, []);

  return (
    <>
      <h1>Datasets</h1>
      <p className="hint">Traces (or single spans) with an expected output and a label, to score an eval rule's version against.</p>
      <CreateDatasetForm onCreated={reload} />
      <h2>Datasets</h2>
      <ListState list={list} loading="Loading the datasets…" empty={<p>No datasets yet.</p>} />
      {list.items.length > 0 && (
        <table className="admin">
          <caption className="visually-hidden">Datasets, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Description</th>
              <th scope="col">Created</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((d) => (
              <tr key={d.id}>
                <td>
                  <Link to={`/datasets/${d.id}`}>{d.name}</Link>
                </td>
                <td>{d.description || <span className="muted">none</span>}</td>
                <td>{formatTime(d.created_at)}</td>
                <td>{formatTime(d.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={list} />
    </>
  );
}

function CreateDatasetForm({ onCreated }: { onCreated: () => void }) {
  const allowed = usePermission('POST /v1/datasets');
  const create = useAction();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [done, setDone] = useState('');
  const disabled = !allowed.allowed || create.busy !== null;
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone('');
    const created = await create.run('create', () => unwrap(api.POST('/v1/datasets', { body: { name, description } })));
    if (created) {
      setDone(`Created ${created.name}.`);
      setName('');
      setDescription('');
      onCreated();
    }
  };
  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-labelledby="create-dataset-title" aria-describedby={allowed.allowed ? undefined : 'create-dataset-reason'}>
      <h2 id="create-dataset-title">Create a dataset</h2>
      <Reason id="create-dataset-reason" permission={allowed} what="Creating datasets" />
      <div className="form-row">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} disabled={disabled} />
        </label>
        <label>
          Description
          <input value={description} onChange={(e) => setDescription(e.target.value)} maxLength={2000} disabled={disabled} />
        </label>
        <button type="submit" className="primary" disabled={disabled}>
          {create.busy ? 'Creating…' : 'Create dataset'}
        </button>
      </div>
      <p role="status" className="hint">
        {done}
      </p>
      {create.error !== undefined && <ErrorNotice error={create.error} />}
    </form>
  );
}

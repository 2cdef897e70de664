import { ListState, LoadMore } from '../ui/lists';
import { useEffect, useReducer, useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { useApi } from '../api/useApi';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';
import { usePages } from '../api/usePages';
import { formatRate } from '../control/format';
import { formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { RunProgress } from './RunProgress';
import { useAllRules } from './rules';
import type { ItemBody, ItemLabel } from './types';
import { ExportButtons, saveFile } from '../ui/ExportButtons';

export function DatasetPage() {
  const { id = '' } = useParams();
  const dataset = useApi(`dataset:${id}`, (signal) => unwrap(api.GET('/v1/datasets/{id}', { params: { path: { id } }, signal })));
  const [version, reload] = useReducer((n: number) => n + 1, 0);
  useEffect(() => {
    document.title = `${dataset.data?.name ?? 'Dataset'} · Looptrace`;
  }, [dataset.data?.name]);

  if (dataset.error !== undefined) {
    return (
      <>
        <h1>Dataset</h1>
        <ErrorNotice error={dataset.error} />
      </>
    );
  }
  if (!dataset.data) return <p aria-live="polite">Loading the dataset…</p>;
  const d = dataset.data;
  return (
    <>
      <p>
        <Link to="/datasets">← Datasets</Link>
      </p>
      <h1>{d.name}</h1>
      {d.description && <p>{d.description}</p>}
      <ExportButtons
        name="Export the items"
        text="Export the items:"
        download={async (format) => {
          const file = await unwrap(api.GET('/v1/datasets/{id}/export', { params: { path: { id }, query: { format } }, parseAs: 'blob' }));
          saveFile(file, `${d.name.replace(/[^\w.-]+/g, '_') || 'dataset'}.${format}`);
        }}
      />
      <Runs id={id} />
      <AddItemForm id={id} onAdded={reload} />
      <Items id={id} version={version} />
    </>
  );
}

function Runs({ id }: { id: string }) {
  const navigate = useNavigate();
  const allowed = usePermission('POST /v1/datasets/{id}/runs');
  const rules = useAllRules();
  const start = useAction();
  const [versionId, setVersionId] = useState('');
  const runs = usePages(
    `dataset-runs:${id}`,
    (cursor, signal) => unwrap(api.GET('/v1/datasets/{id}/runs', { params: { path: { id }, query: { limit: 20, cursor } }, signal })),
    (page) => page.runs,
  );
  const chosen = versionId || rules.data?.[0]?.current_version_id || '';
  const disabled = !allowed.allowed || start.busy !== null || !chosen;
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const run = await start.run('start', () => unwrap(api.POST('/v1/datasets/{id}/runs', { params: { path: { id } }, body: { eval_version_id: chosen } })));
    if (run) void navigate(`/datasets/${id}/runs/${run.id}`);
  };
  return (
    <section aria-labelledby="runs-title">
      <h2 id="runs-title">Eval runs</h2>
      <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-label="Start a run" aria-describedby={allowed.allowed ? undefined : 'start-run-reason'}>
        <Reason id="start-run-reason" permission={allowed} what="Starting runs" />
        <div className="form-row">
          <label>
            Eval rule (its current version)
            <select value={chosen} onChange={(e) => setVersionId(e.target.value)} disabled={!allowed.allowed || start.busy !== null}>
              {rules.data?.length === 0 && <option value="">No eval rules yet</option>}
              {rules.data?.map((r) => (
                <option key={r.id} value={r.current_version_id}>
                  {r.name} · v{r.version}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" className="primary" disabled={disabled}>
            {start.busy ? 'Starting…' : 'Start run'}
          </button>
        </div>
        {rules.error !== undefined && <ErrorNotice error={rules.error} />}
        {start.error !== undefined && <ErrorNotice error={start.error} />}
      </form>
      {runs.error !== undefined && <ErrorNotice error={runs.error} />}
      {!runs.loading && runs.items.length === 0 && runs.error === undefined && <p>No runs yet.</p>}
      {runs.items.length > 0 && (
        <table className="admin">
          <caption className="visually-hidden">Eval runs of this dataset, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Started</th>
              <th scope="col">Status</th>
              <th scope="col">Progress</th>
              <th scope="col" className="num">
                Pass rate
              </th>
              <th scope="col">Run</th>
            </tr>
          </thead>
          <tbody>
            {runs.items.map((run) => (
              <tr key={run.id}>
                <td>{formatTime(run.created_at)}</td>
                <td>
                  <span className={`badge ${run.status === 'completed' ? 'ok' : run.status === 'failed' ? 'error' : 'neutral'}`}>{run.status}</span>
                </td>
                <td>
                  <RunProgress run={run} />
                </td>
                <td className="num">{formatRate(run.pass_rate)}</td>
                <td>
                  <Link to={`/datasets/${id}/runs/${run.id}`}>
                    Open<span className="visually-hidden"> the run of {formatTime(run.created_at)}</span>
                  </Link>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={runs} label="Load more runs" />
    </section>
  );
}

function AddItemForm({ id, onAdded }: { id: string; onAdded: () => void }) {
  const allowed = usePermission('POST /v1/datasets/{id}/items');
  const add = useAction();
  const [traceId, setTraceId] = useState('');
  const [spanId, setSpanId] = useState('');
  const [label, setLabel] = useState<ItemLabel | ''>('');
  const [expected, setExpected] = useState('');
  const [done, setDone] = useState('');
  const disabled = !allowed.allowed || add.busy !== null;
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone('');
    const body: ItemBody = {
      trace_id: traceId.trim(),
      span_id: spanId.trim() || null,
      label: label || null,
      expected: expected === '' ? null : expected,
    };
    const added = await add.run('add', () => unwrap(api.POST('/v1/datasets/{id}/items', { params: { path: { id } }, body })));
    if (added) {
      setDone(`Added the item of trace ${traceId.trim()}.`);
      setTraceId('');
      setSpanId('');
      setExpected('');
      onAdded();
    }
  };
  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-labelledby="add-item-title" aria-describedby={allowed.allowed ? undefined : 'add-item-reason'}>
      <h2 id="add-item-title">Add an item</h2>
      <Reason id="add-item-reason" permission={allowed} what="Adding items" />
      <div className="form-row">
        <label>
          Trace id
          <input value={traceId} onChange={(e) => setTraceId(e.target.value)} required disabled={disabled} />
        </label>
        <label>
          Span id (optional: the whole trace)
          <input value={spanId} onChange={(e) => setSpanId(e.target.value)} disabled={disabled} />
        </label>
        <label>
          Label
          <select value={label} onChange={(e) => setLabel(e.target.value as ItemLabel | '')} disabled={disabled}>
            <option value="">Unlabeled</option>
            <option value="pass">pass</option>
            <option value="fail">fail</option>
          </select>
        </label>
      </div>
      <label>
        Expected output (optional)
        <textarea rows={2} value={expected} onChange={(e) => setExpected(e.target.value)} disabled={disabled} />
      </label>
      <button type="submit" className="primary" disabled={disabled}>
        {add.busy ? 'Adding…' : 'Add item'}
      </button>
      <p role="status" className="hint">
        {done}
      </p>
      {add.error !== undefined && <ErrorNotice error={add.error} />}
    </form>
  );
}

function Items({ id, version }: { id: string; version: number }) {
  const items = usePages(
    `dataset-items:${id}:${version}`,
    (cursor, signal) => unwrap(api.GET('/v1/datasets/{id}/items', { params: { path: { id }, query: { limit: 50, cursor } }, signal })),
    (page) => page.items,
  );
  return (
    <section aria-labelledby="items-title">
      <h2 id="items-title">Items</h2>
      <ListState list={items} loading="Loading the items…" empty={<p>No items yet.</p>} />
      {items.items.length > 0 && (
        <table className="admin items">
          <caption className="visually-hidden">Items in the order they were added</caption>
          <thead>
            <tr>
              <th scope="col">Trace</th>
              <th scope="col">Span</th>
              <th scope="col">Label</th>
              <th scope="col">Expected</th>
              <th scope="col">Added</th>
            </tr>
          </thead>
          <tbody>
            {items.items.map((item) => (
              <tr key={item.id}>
                <td>
                  <Link to={`/traces/${item.trace_id}`}>
                    <code>{item.trace_id}</code>
                  </Link>
                </td>
                <td>{item.span_id ? <code>{item.span_id.slice(0, 8)}</code> : <span className="muted">whole trace</span>}</td>
                <td>{item.label ? <span className={`badge ${item.label === 'pass' ? 'ok' : 'error'}`}>{item.label}</span> : <span className="muted">unlabeled</span>}</td>
                <td>{item.expected ?? <span className="muted">none</span>}</td>
                <td>{formatTime(item.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={items} label="Load more items" />
    </section>
  );
}

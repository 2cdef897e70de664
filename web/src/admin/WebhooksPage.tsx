import { ListState, LoadMore } from '../ui/lists';
import { useEffect, useReducer, useState, type FormEvent, type ReactNode } from 'react';
import { api, noContent, unwrap, type Ok } from '../api/client';
import type { paths } from '../api/schema';
import { useApi } from '../api/useApi';
import { formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { EditButton, FormFooter, useEditor } from '../ui/editing';
import { RowActions, useRowDelete } from '../ui/RowActions';
import { DeadLetters } from './DeadLetters';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';
import { usePages } from '../api/usePages';

type WebhookList = Ok<'/v1/webhooks'>;
type Webhook = WebhookList['webhooks'][number];
type EventType = Webhook['events'][number];
type CreateWebhook = NonNullable<paths['/v1/webhooks']['post']['requestBody']>['content']['application/json'];
type UpdateWebhook = NonNullable<paths['/v1/webhooks/{id}']['patch']['requestBody']>['content']['application/json'];
type TestResult = NonNullable<Awaited<ReturnType<typeof testWebhook>>>;

/** The events a webhook can subscribe to; an event the API adds fails the build until it is named here. */
const EVENTS: Record<EventType, string> = {
  'failure.detected': 'A failure cluster is new, or recurs after an hour',
  'anomaly.detected': 'An anomaly is detected',
  'prompt.deployment.changed': 'A prompt deployment changes state',
};
const MIN_SECRET = 16;

const testWebhook = (id: string) => unwrap(api.POST('/v1/webhooks/{id}/test', { params: { path: { id } } }));

/** Webhooks (Pro plan and above): list, create, edit, delete, send a test ping, and each one's delivery log. */
export function WebhooksPage() {
  const editor = useEditor((hook: Webhook) => hook.updated_at);
  const deleter = useRowDelete('DELETE /v1/webhooks/{id}', { reasonId: 'delete-webhook-reason', what: 'Deleting webhooks', reload: editor.reload });
  const list = usePages(
    `webhooks:${editor.version}`,
    (cursor, signal) => unwrap(api.GET('/v1/webhooks', { params: { query: { limit: 100, cursor } }, signal })),
    (page: WebhookList) => page.webhooks,
  );
  useEffect(() => {
    document.title = 'Webhooks · Looptrace';
  }, []);

  return (
    <>
      <h1>Webhooks</h1>
      <p className="hint">
        Looptrace POSTs each subscribed event to the webhook&apos;s https URL, signed with HMAC-SHA256 of its secret (the secret is stored encrypted and never shown again).
      </p>
      <WebhookForm key={editor.formKey} hook={editor.editing} onSaved={editor.onSaved} onCancel={editor.onCancel} />
      {editor.status}
      <h2>Webhooks</h2>
      {deleter.reason}
      {deleter.error}
      <ListState list={list} loading="Loading the webhooks…" empty={<p>No webhooks yet.</p>} />
      <ul className="webhooks">
        {list.items.map((hook) => (
          <WebhookItem
            key={hook.id}
            hook={hook}
            onEdit={() => editor.edit(hook)}
            remove={
              <RowActions
                id={hook.id}
                subject={`the webhook for ${hook.url}`}
                deleter={deleter}
                question="Its pending deliveries are dropped."
                call={() => noContent(api.DELETE('/v1/webhooks/{id}', { params: { path: { id: hook.id } } }))}
              />
            }
          />
        ))}
      </ul>
      <LoadMore list={list} />
      <DeadLetters webhookUrl={(id) => list.items.find((hook) => hook.id === id)?.url} />
    </>
  );
}

/** Create a webhook, or edit one (PATCH: only what changed is sent; an empty secret keeps the stored one). */
function WebhookForm({ hook, onSaved, onCancel }: { hook: Webhook | null; onSaved: (message: string) => void; onCancel: () => void }) {
  const allowed = usePermission(hook ? 'PATCH /v1/webhooks/{id}' : 'POST /v1/webhooks');
  const save = useAction();
  const [url, setUrl] = useState(hook?.url ?? '');
  const [secret, setSecret] = useState('');
  const [events, setEvents] = useState<EventType[]>(hook?.events ?? ['failure.detected']);
  const [enabled, setEnabled] = useState(hook?.enabled ?? true);
  const disabled = !allowed.allowed || save.busy !== null;
  const title = hook ? `Edit the webhook for ${hook.url}` : 'Create a webhook';

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const saved = await save.run('save', () => {
      if (!hook) {
        const body: CreateWebhook = { url: url.trim(), secret, events, enabled };
        return unwrap(api.POST('/v1/webhooks', { body }));
      }
      const body: UpdateWebhook = { url: url.trim(), events, enabled, ...(secret === '' ? {} : { secret }) };
      return unwrap(api.PATCH('/v1/webhooks/{id}', { params: { path: { id: hook.id } }, body }));
    });
    if (saved) onSaved(hook ? `Saved the webhook for ${saved.url}.` : `Created the webhook for ${saved.url}.`);
  };

  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-label={title} aria-describedby={allowed.allowed ? undefined : 'webhook-form-reason'}>
      <h2>{title}</h2>
      <Reason id="webhook-form-reason" permission={allowed} what={hook ? 'Editing webhooks' : 'Creating webhooks'} />
      <div className="form-row">
        <label>
          URL (https)
          <input type="url" value={url} onChange={(e) => setUrl(e.target.value)} required maxLength={2000} placeholder="https://example.com/looptrace" disabled={disabled} />
        </label>
        <label>
          {hook ? `New secret (empty keeps the current one; at least ${MIN_SECRET} characters)` : `Secret (at least ${MIN_SECRET} characters)`}
          <input
            type="password"
            autoComplete="new-password"
            value={secret}
            onChange={(e) => setSecret(e.target.value)}
            required={!hook}
            minLength={MIN_SECRET}
            maxLength={256}
            disabled={disabled}
          />
        </label>
      </div>
      <fieldset className="form-row" disabled={disabled}>
        <legend>Events</legend>
        {Object.entries(EVENTS).map(([value, label]) => (
          <label className="check" key={value}>
            <input
              type="checkbox"
              checked={events.includes(value as EventType)}
              onChange={(e) => setEvents(e.target.checked ? [...events, value as EventType] : events.filter((t) => t !== value))}
            />
            <code>{value}</code>: {label}
          </label>
        ))}
        <label className="check">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
          Enabled (a disabled webhook receives nothing)
        </label>
      </fieldset>
      <FormFooter
        editing={hook !== null}
        busy={save.busy !== null}
        disabled={disabled || events.length === 0}
        createLabel="Create webhook"
        saveLabel="Save webhook"
        onCancel={onCancel}
        error={save.error}
      >
        {events.length === 0 && <span className="hint">Pick at least one event.</span>}
      </FormFooter>
    </form>
  );
}

function WebhookItem({ hook, onEdit, remove }: { hook: Webhook; onEdit: () => void; remove: ReactNode }) {
  const mayTest = usePermission('POST /v1/webhooks/{id}/test');
  const test = useAction();
  const [result, setResult] = useState<TestResult>();
  const [showLog, setShowLog] = useState(false);
  const [logVersion, reloadLog] = useReducer((n: number) => n + 1, 0);
  const reasonId = `test-reason-${hook.id}`;

  const runTest = async () => {
    setResult(undefined);
    const answer = await test.run('test', () => testWebhook(hook.id));
    if (answer) {
      setResult(answer);
      reloadLog();
    }
  };

  return (
    <li className="card webhook" aria-label={`Webhook ${hook.url}`}>
      <p className="webhook-url">
        <code>{hook.url}</code> {hook.enabled ? <span className="badge ok">enabled</span> : <span className="badge neutral">disabled</span>}
      </p>
      <p className="hint">
        Events: {hook.events.join(', ')} · created {formatTime(hook.created_at)}
        {hook.created_by && ` by ${hook.created_by}`}
      </p>
      <p className="secret-actions">
        <button type="button" onClick={() => void runTest()} disabled={!mayTest.allowed || test.busy !== null} aria-describedby={mayTest.allowed ? undefined : reasonId}>
          {test.busy ? 'Sending…' : 'Send a test'}
        </button>
        <button type="button" aria-expanded={showLog} onClick={() => setShowLog((s) => !s)}>
          {showLog ? 'Hide the delivery log' : 'Show the delivery log'}
        </button>
        <EditButton subject={`the webhook for ${hook.url}`} onClick={onEdit} />
        {remove}
      </p>
      <Reason id={reasonId} permission={mayTest} what="Sending a test" />
      <div role="status" aria-live="polite">
        {result && (
          <div className={`notice ${result.status >= 200 && result.status < 300 ? 'notice-ok' : 'notice-error'}`}>
            <strong>Test answered: status {result.status}</strong>
            {result.error && <p>Not reached: {result.error}</p>}
            {result.body !== '' && (
              <>
                <p className="notice-meta">Response body (first 4 KB):</p>
                <pre className="test-body">{result.body}</pre>
              </>
            )}
          </div>
        )}
      </div>
      {test.error !== undefined && <ErrorNotice error={test.error} />}
      {showLog && <Deliveries id={hook.id} version={logVersion} />}
    </li>
  );
}

function Deliveries({ id, version }: { id: string; version: number }) {
  const log = useApi(`deliveries:${id}:${version}`, (signal) => unwrap(api.GET('/v1/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit: 50 } }, signal })));
  if (log.error !== undefined) return <ErrorNotice error={log.error} />;
  if (log.loading) return <p aria-live="polite">Loading the deliveries…</p>;
  const deliveries = log.data?.deliveries ?? [];
  if (deliveries.length === 0) return <p>No deliveries yet.</p>;
  return (
    <table className="admin deliveries">
      <caption>Last {deliveries.length} deliveries, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Event</th>
          <th scope="col" className="num">
            Attempt
          </th>
          <th scope="col" className="num">
            Status
          </th>
          <th scope="col" className="num">
            Duration
          </th>
          <th scope="col">Error</th>
        </tr>
      </thead>
      <tbody>
        {deliveries.map((d) => (
          <tr key={d.id}>
            <td>{formatTime(d.created_at)}</td>
            <td>
              <code>{d.event_type}</code>
            </td>
            <td className="num">{d.attempt}</td>
            <td className="num">
              <span className={`badge ${d.status >= 200 && d.status < 300 ? 'ok' : 'error'}`}>{d.status === 0 ? 'unreached' : d.status}</span>
            </td>
            <td className="num">{d.duration_ms} ms</td>
            <td>{d.error ?? '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

import { ListState, LoadMore } from '../ui/lists';
import { useReducer, useState } from 'react';
import { api, unwrap, type Ok } from '../api/client';
import { usePages } from '../api/usePages';
import { formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';

type DlqList = Ok<'/v1/dlq'>;
type DlqState = 'open' | 'resolved' | 'all';

const STATES: Record<DlqState, string> = { open: 'Open', resolved: 'Retried or discarded', all: 'All' };

/**
 * Deliveries that used up their 8 attempts (GET /v1/dlq): what an on-call engineer looks at when
 * a receiver was down. Retrying runs the delivery again from its first attempt, against the
 * webhook as it is now; discarding closes the entry. Both are for owners.
 */
export function DeadLetters({ webhookUrl }: { webhookUrl: (id: string) => string | undefined }) {
  const [state, setState] = useState<DlqState>('open');
  const [version, reload] = useReducer((n: number) => n + 1, 0);
  const list = usePages(
    `dlq:${state}:${version}`,
    (cursor, signal) => unwrap(api.GET('/v1/dlq', { params: { query: { state, limit: 50, cursor } }, signal })),
    (page: DlqList) => page.entries,
  );
  const resolve = useAction();
  const mayResolve = usePermission('POST /v1/dlq/{id}/retry');
  const [done, setDone] = useState('');

  const act = async (id: string, how: 'retry' | 'discard') => {
    setDone('');
    const path = how === 'retry' ? '/v1/dlq/{id}/retry' : '/v1/dlq/{id}/discard';
    const entry = await resolve.run(id, () => unwrap(api.POST(path, { params: { path: { id } } })));
    if (entry) {
      setDone(how === 'retry' ? `Retrying ${entry.summary} from its first attempt.` : `Discarded ${entry.summary}.`);
      reload();
    }
  };

  return (
    <section aria-labelledby="dlq-title">
      <h2 id="dlq-title">Failed deliveries (dead letters)</h2>
      <p className="hint">A delivery that failed 8 times stops here. Retrying sends it again from its first attempt, to the webhook&apos;s current URL, if it is enabled.</p>
      <label className="inline-label">
        Show
        <select value={state} onChange={(e) => setState(e.target.value as DlqState)}>
          {Object.entries(STATES).map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <Reason id="dlq-reason" permission={mayResolve} what="Retrying and discarding" />
      <p role="status" className="hint">
        {done}
      </p>
      {resolve.error !== undefined && <ErrorNotice error={resolve.error} />}
      <ListState list={list} loading="Loading the dead letters…" empty={<p>{state === 'open' ? 'No failed deliveries waiting.' : 'None.'}</p>} />
      {list.items.length > 0 && (
        <table className="admin dead-letters">
          <caption className="visually-hidden">Dead-lettered deliveries, newest first</caption>
          <thead>
            <tr>
              <th scope="col">What</th>
              <th scope="col" className="num">
                Attempts
              </th>
              <th scope="col">Last error</th>
              <th scope="col">Dead-lettered</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((entry) => (
              <tr key={entry.id}>
                <td>
                  {entry.summary}
                  {typeof entry.payload.webhook_id === 'string' && webhookUrl(entry.payload.webhook_id) && (
                    <div className="muted">
                      <code>{webhookUrl(entry.payload.webhook_id)}</code>
                    </div>
                  )}
                </td>
                <td className="num">{entry.attempts}</td>
                <td>{entry.last_error}</td>
                <td>{formatTime(entry.created_at)}</td>
                <td>
                  {entry.resolution ? (
                    `${entry.resolution} ${entry.resolved_at ? formatTime(entry.resolved_at) : ''}`
                  ) : (
                    <>
                      {(['retry', 'discard'] as const).map((how) => (
                        <button
                          key={how}
                          type="button"
                          disabled={!mayResolve.allowed || resolve.busy !== null}
                          aria-describedby={mayResolve.allowed ? undefined : 'dlq-reason'}
                          onClick={() => void act(entry.id, how)}
                        >
                          {how === 'retry' ? 'Retry' : 'Discard'}
                          <span className="visually-hidden"> {entry.summary}</span>
                        </button>
                      ))}
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={list} />
    </section>
  );
}

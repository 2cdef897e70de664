import { ListState, LoadMore } from '../ui/lists';
import { useEffect } from 'react';
import { Link } from 'react-router';
import { usePages } from '../api/usePages';
import { api, unwrap } from '../api/client';
import { formatCost, formatCount, formatTime } from '../traces/format';
import { sessionPath } from './paths';

/** GET /v1/sessions: the traces grouped by session_id, most recent first, 50 at a time. */
export function SessionsPage() {
  const list = usePages(
    'sessions',
    (cursor, signal) => unwrap(api.GET('/v1/sessions', { params: { query: { limit: 50, cursor } }, signal })),
    (page) => page.sessions,
  );
  useEffect(() => {
    document.title = 'Sessions · Looptrace';
  }, []);

  return (
    <>
      <h1>Sessions</h1>
      <p className="hint">Traces that share a session id, over the last 30 days.</p>
      <ListState list={list} loading="Loading the sessions…" empty={<p>No sessions in the last 30 days.</p>} />
      {list.items.length > 0 && (
        <table className="admin sessions">
          <caption className="visually-hidden">Sessions, most recent first</caption>
          <thead>
            <tr>
              <th scope="col">Session</th>
              <th scope="col" className="num">
                Traces
              </th>
              <th scope="col" className="num">
                Spans
              </th>
              <th scope="col" className="num">
                Errors
              </th>
              <th scope="col" className="num">
                Tokens
              </th>
              <th scope="col" className="num">
                Cost
              </th>
              <th scope="col">First started</th>
              <th scope="col">Last ended</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((s) => (
              <tr key={s.session_id}>
                <td>
                  <Link to={sessionPath(s.session_id)}>{s.session_id}</Link>
                </td>
                <td className="num">{formatCount(s.trace_count)}</td>
                <td className="num">{formatCount(s.span_count)}</td>
                <td className="num">{s.error_count > 0 ? <span className="badge error">{formatCount(s.error_count)}</span> : '0'}</td>
                <td className="num">{formatCount(s.total_tokens)}</td>
                <td className="num">{formatCost(s.total_cost)}</td>
                <td>{formatTime(s.first_started_at)}</td>
                <td>{formatTime(s.last_ended_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={list} />
    </>
  );
}

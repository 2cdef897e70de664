import { Fact } from '../ui/Fact';
import { LoadMore } from '../ui/lists';
import { useEffect } from 'react';
import { Link, useParams } from 'react-router';
import { usePages } from '../api/usePages';
import { api, unwrap } from '../api/client';
import { formatCost, formatCount, formatDuration, formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';

/** GET /v1/sessions/{id}: the session's totals and its traces, 100 at a time. */
export function SessionDetailPage() {
  const { id = '' } = useParams();
  // Each page is kept whole: the first one carries the session's totals.
  const pages = usePages(
    `session:${id}`,
    (cursor, signal) => unwrap(api.GET('/v1/sessions/{id}', { params: { path: { id }, query: { limit: 100, cursor } }, signal })),
    (page) => [page],
  );
  const session = pages.items[0]?.session;
  const traces = pages.items.flatMap((p) => p.traces);
  useEffect(() => {
    document.title = `Session ${id} · Looptrace`;
  }, [id]);

  return (
    <>
      <p>
        <Link to="/sessions">← Sessions</Link>
      </p>
      <h1>Session {id}</h1>
      {pages.error !== undefined && <ErrorNotice error={pages.error} />}
      {pages.loading && <p aria-live="polite">Loading the session…</p>}
      {session && (
        <dl className="facts">
          <Fact term="Traces" value={formatCount(session.trace_count)} />
          <Fact term="Spans" value={formatCount(session.span_count)} />
          <Fact term="Errors" value={formatCount(session.error_count)} />
          <Fact term="Tokens" value={`${formatCount(session.total_tokens)} (${formatCount(session.prompt_tokens)} prompt, ${formatCount(session.completion_tokens)} completion)`} />
          <Fact term="Cost" value={formatCost(session.total_cost)} />
          <Fact term="First started" value={formatTime(session.first_started_at)} />
          <Fact term="Last ended" value={formatTime(session.last_ended_at)} />
        </dl>
      )}
      {traces.length > 0 && (
        <>
          <h2>Traces of this session</h2>
          <table className="traces">
            <caption className="visually-hidden">Traces of this session</caption>
            <thead>
              <tr>
                <th scope="col">Started</th>
                <th scope="col">Name</th>
                <th scope="col">Model</th>
                <th scope="col" className="num">
                  Latency
                </th>
                <th scope="col" className="num">
                  Tokens
                </th>
                <th scope="col" className="num">
                  Cost
                </th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {traces.map((trace) => (
                <tr key={trace.id}>
                  <td>{formatTime(trace.started_at)}</td>
                  <td>
                    <Link to={`/traces/${trace.id}`}>{trace.name || '(unnamed)'}</Link>
                  </td>
                  <td>{trace.model}</td>
                  <td className="num">{formatDuration(trace.latency_ms)}</td>
                  <td className="num">{formatCount(trace.total_token_count)}</td>
                  <td className="num">{formatCost(trace.cost)}</td>
                  <td>{trace.error === null && trace.failure_types.length === 0 ? <span className="badge ok">ok</span> : <span className="badge error">error</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <LoadMore list={pages} label="Load more traces" />
    </>
  );
}

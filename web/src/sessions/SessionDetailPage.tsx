import { Fact } from '../ui/Fact';
import { LoadMore } from '../ui/lists';
import { useEffect } from 'react';
import { Link, useParams } from 'react-router';
import { usePages } from '../api/usePages';
import { api, unwrap } from '../api/client';
import { formatCost, formatCount, formatDuration, formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { PayloadView } from '../traces/view/PayloadView';
import '../traces/view/traceView.css';
import './sessions.css';

/** GET /v1/sessions/{id}: the session's totals and its traces as a conversation, oldest first, 100 at a time: each turn's input and output. */
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
          <h2 id="turns-title">Conversation</h2>
          <ol className="session-turns" aria-labelledby="turns-title">
            {traces.map((trace, i) => (
              <li key={trace.id} className="session-turn" aria-label={`Turn ${i + 1}: ${trace.name || '(unnamed)'}`}>
                <div className="session-turn-head">
                  <span className="muted">Turn {i + 1}</span>
                  <Link to={`/traces/${trace.id}`}>{trace.name || '(unnamed)'}</Link>
                  <span className="muted">
                    {formatTime(trace.started_at)} · {formatDuration(trace.latency_ms)} · {formatCount(trace.total_token_count)} tokens · {formatCost(trace.cost)}
                    {trace.model && ` · ${trace.model}`}
                  </span>
                  {trace.error === null && trace.failure_types.length === 0 ? <span className="badge ok">ok</span> : <span className="badge error">error</span>}
                </div>
                <div className="io">
                  <PayloadView label={`Input of turn ${i + 1}`} text={trace.input} />
                  <PayloadView label={`Output of turn ${i + 1}`} text={trace.output} />
                </div>
              </li>
            ))}
          </ol>
        </>
      )}
      <LoadMore list={pages} label="Load more traces" />
    </>
  );
}

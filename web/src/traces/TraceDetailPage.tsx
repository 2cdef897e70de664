import { DetailState } from '../ui/lists';
import { Fact } from '../ui/Fact';
import { useEffect, useState, type KeyboardEvent } from 'react';
import { Link, useLocation, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { useApi } from '../api/useApi';
import { clusterTypeLabel } from '../failures/clusters';
import { sessionPath } from '../sessions/paths';
import { CopyText } from '../ui/CopyText';
import { ErrorNotice } from '../ui/ErrorNotice';
import { JsonBlock, Payload } from '../ui/Payload';
import { failureTypeLabel } from './filters';
import { formatCost, formatCount, formatDuration, formatTime } from './format';
import { spanRows, type Span, type SpanRow, type TraceDetail } from './spanTree';
import { TraceExtras } from './TraceExtras';

export function TraceDetailPage() {
  const { id = '' } = useParams();
  const location = useLocation();
  const back = (location.state as { list?: string } | null)?.list;
  const trace = useApi(`trace:${id}`, (signal) => unwrap(api.GET('/v1/traces/{id}', { params: { path: { id } }, signal })));
  useEffect(() => {
    document.title = `${trace.data?.name || 'Trace'} · Looptrace`;
  }, [trace.data]);

  return (
    <>
      <p>
        <Link to={back ? `/traces?${back}` : '/traces'}>← Traces</Link>
      </p>
      <DetailState state={trace} title="Trace" loading="Loading the trace…" />
      {trace.data && <TraceView trace={trace.data} />}
    </>
  );
}

function TraceView({ trace }: { trace: TraceDetail }) {
  const { rows, durationMs } = spanRows(trace.spans);
  const [selectedId, setSelectedId] = useState(rows[0]?.span.id);
  const selected = trace.spans.find((s) => s.id === selectedId);
  return (
    <>
      <h1>{trace.name || '(unnamed trace)'}</h1>
      <dl className="facts">
        <Fact term="Trace id" value={<code>{trace.id}</code>} />
        {trace.otel_trace_id !== null && <Fact term="OTel trace id" value={<CopyText text={trace.otel_trace_id} name="OTel trace id" />} />}
        <Fact term="Started" value={formatTime(trace.started_at)} />
        <Fact term="Latency" value={formatDuration(trace.latency_ms)} />
        <Fact term="Tokens" value={`${formatCount(trace.total_token_count)} (${formatCount(trace.prompt_tokens_total)} prompt, ${formatCount(trace.completion_tokens_total)} completion)`} />
        <Fact term="Cost" value={formatCost(trace.cost)} />
        <Fact term="Model" value={trace.model || '—'} />
        <Fact term="Spans" value={trace.span_count} />
        <Fact term="Control-loop depth" value={trace.control_loop_depth} />
        {trace.session_id && (
          <Fact
            term="Session"
            value={
              <>
                <Link to={sessionPath(trace.session_id)}>{trace.session_id}</Link>{' '}
                <Link to={`/traces?session_id=${encodeURIComponent(trace.session_id)}`} className="muted">
                  (in the traces list)
                </Link>
              </>
            }
          />
        )}
        {trace.tags.length > 0 && <Fact term="Tags" value={trace.tags.join(', ')} />}
      </dl>
      <Problems error={trace.error} failureTypes={trace.failure_types} />
      <FailureClusters traceId={trace.id} />
      <div className="io">
        <Payload label="Trace input" text={trace.input} />
        <Payload label="Trace output" text={trace.output} />
      </div>
      <h2 id="waterfall-title">Spans</h2>
      <Waterfall rows={rows} durationMs={durationMs} selectedId={selectedId} onSelect={setSelectedId} />
      {selected && <SpanDetail span={selected} />}
      <JsonBlock label="Trace metadata" value={trace.metadata} />
      <TraceExtras traceId={trace.id} />
    </>
  );
}

function Problems({ error, failureTypes }: { error: string | null; failureTypes: string[] }) {
  if (error === null && failureTypes.length === 0) return null;
  return (
    <div className="notice notice-error">
      {error !== null && (
        <p>
          <strong>Error:</strong> {error}
        </p>
      )}
      {failureTypes.length > 0 && (
        <p>
          <strong>{failureTypes.length === 1 ? 'Failure type:' : 'Failure types:'}</strong>{' '}
          {failureTypes.map((type) => (
            <span key={type} className="badge failure">
              {failureTypeLabel(type)}
            </span>
          ))}
        </p>
      )}
    </div>
  );
}

/** The failure clusters a span of this trace was counted in, each a link to the cluster. */
function FailureClusters({ traceId }: { traceId: string }) {
  const clusters = useApi(`trace-clusters:${traceId}`, (signal) =>
    unwrap(api.GET('/v1/failures/clusters', { params: { query: { trace_id: traceId, limit: 100 } }, signal })),
  );
  if (clusters.error !== undefined) return <ErrorNotice error={clusters.error} />;
  const found = clusters.data?.clusters ?? [];
  if (found.length === 0) return null;
  return (
    <p className="trace-clusters">
      <strong>{found.length === 1 ? 'Failure cluster:' : 'Failure clusters:'}</strong>{' '}
      {found.map((cluster, i) => (
        <span key={cluster.id}>
          {i > 0 && ', '}
          <Link to={`/failures/clusters/${cluster.id}`}>{clusterTypeLabel(cluster.type)}</Link>{' '}
          <span className="muted">
            ({formatCount(cluster.trace_count)} {cluster.trace_count === 1 ? 'trace' : 'traces'})
          </span>
        </span>
      ))}
    </p>
  );
}

/** The span tree as a waterfall: one button per span (↑/↓ move, Enter shows it), indented by depth, its bar on the trace's time line. */
function Waterfall({ rows, durationMs, selectedId, onSelect }: { rows: SpanRow[]; durationMs: number; selectedId: string | undefined; onSelect: (id: string) => void }) {
  const onKey = (event: KeyboardEvent<HTMLButtonElement>) => {
    const item = event.currentTarget.parentElement;
    const next = event.key === 'ArrowDown' ? item?.nextElementSibling : event.key === 'ArrowUp' ? item?.previousElementSibling : null;
    const button = next?.querySelector('button');
    if (!button) return;
    event.preventDefault();
    button.focus();
  };
  return (
    <div className="waterfall" role="group" aria-labelledby="waterfall-title">
      <div className="waterfall-axis" aria-hidden="true">
        <span>0</span>
        <span>{formatDuration(durationMs)}</span>
      </div>
      <ol>
        {rows.map(({ span, depth, offset, width }) => (
          <li key={span.id}>
            <button
              type="button"
              className="span-row"
              aria-current={span.id === selectedId ? 'true' : undefined}
              onClick={() => onSelect(span.id)}
              onKeyDown={onKey}
            >
              <span className="span-name" style={{ paddingLeft: `${depth * 1.25}rem` }}>
                {span.name || '(unnamed)'} <span className="muted">{span.type}</span>
                {span.error !== null && <span className="badge error span-badge">error</span>}
              </span>
              <span className="span-track">
                <span className={`span-bar${span.error !== null ? ' span-bar-error' : ''}`} style={{ left: `${offset}%`, width: `${width}%` }} />
              </span>
              <span className="span-time">{formatDuration(span.latency_ms)}</span>
            </button>
          </li>
        ))}
      </ol>
    </div>
  );
}

function SpanDetail({ span }: { span: Span }) {
  return (
    <section className="span-detail" aria-labelledby="span-title">
      <h2 id="span-title">Span: {span.name || '(unnamed)'}</h2>
      <dl className="facts">
        <Fact term="Type" value={span.type} />
        <Fact term="Model" value={span.model || '—'} />
        <Fact term="Started" value={formatTime(span.start_time)} />
        <Fact term="Latency" value={formatDuration(span.latency_ms)} />
        <Fact term="Tokens" value={`${formatCount(span.prompt_tokens)} prompt, ${formatCount(span.completion_tokens)} completion`} />
        <Fact term="Cost" value={formatCost(span.cost)} />
        {span.otel_span_id ? (
          <>
            <Fact term="OTel span id" value={<CopyText text={span.otel_span_id} name="OTel span id" />} />
            {span.otel_parent_span_id !== null && <Fact term="OTel parent span id" value={<code>{span.otel_parent_span_id}</code>} />}
          </>
        ) : (
          <Fact term="Span id" value={<code>{span.id}</code>} />
        )}
      </dl>
      <Problems error={span.error} failureTypes={span.failure_type ? [span.failure_type] : []} />
      <div className="io">
        <Payload label="Span input" text={span.input} />
        <Payload label="Span output" text={span.output} />
      </div>
      <JsonBlock label="Span metadata" value={span.metadata} />
    </section>
  );
}

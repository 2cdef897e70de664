import { useEffect, useMemo, useState } from 'react';
import { Link, useLocation, useParams } from 'react-router';
import { useApi } from '../api/useApi';
import { sessionPath } from '../sessions/paths';
import { CopyText } from '../ui/CopyText';
import { Fact } from '../ui/Fact';
import { DetailState } from '../ui/lists';
import { JsonBlock } from '../ui/Payload';
import { Tabs } from '../ui/Tabs';
import { formatCost, formatCount, formatDuration, formatTime } from './format';
import { spanForest } from './spanTree';
import { loadTree, type TraceTree } from './view/api';
import { TraceEvaluations, TraceFeedback } from './TraceExtras';
import { PayloadView } from './view/PayloadView';
import { SpanPanel } from './view/SpanPanel';
import { SpanTreeView } from './view/SpanTreeView';
import { Problems, TraceActions, TraceClusters } from './view/TraceRelated';
import './view/traceView.css';

export function TraceDetailPage() {
  const { id = '' } = useParams();
  const location = useLocation();
  const back = (location.state as { list?: string } | null)?.list;
  const trace = useApi(`trace-tree:${id}`, (signal) => loadTree(id, signal));
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

function TraceView({ trace }: { trace: TraceTree }) {
  const forest = useMemo(() => spanForest(trace.spans), [trace.spans]);
  const [openId, setOpenId] = useState(forest.nodes[0]?.span.id);
  const open = useMemo(() => trace.spans.find((s) => s.id === openId), [trace.spans, openId]);
  return (
    <>
      <h1>{trace.name || '(unnamed trace)'}</h1>
      <dl className="facts">
        {trace.otel_trace_id === null ? (
          <Fact term="Trace id" value={<code>{trace.id}</code>} />
        ) : (
          <Fact term="OTel trace id" value={<CopyText text={trace.otel_trace_id} name="OTel trace id" />} />
        )}
        <Fact term="Started" value={formatTime(trace.started_at)} />
        <Fact term="Latency" value={formatDuration(trace.latency_ms)} />
        <Fact term="Tokens" value={`${formatCount(trace.total_token_count)} (${formatCount(trace.prompt_tokens_total)} prompt, ${formatCount(trace.completion_tokens_total)} completion)`} />
        <Fact term="Cost" value={formatCost(trace.cost)} />
        <Fact term="Model" value={trace.model || '—'} />
        <Fact term="Spans" value={formatCount(trace.span_count)} />
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
      <div className="io">
        <PayloadView label="Trace input" text={trace.input} />
        <PayloadView label="Trace output" text={trace.output} />
      </div>
      <h2 id="spans-title">Spans</h2>
      <div className="trace-view">
        <SpanTreeView forest={forest} openId={openId} onOpen={setOpenId} />
        {open && <SpanPanel traceId={trace.id} span={open} />}
      </div>
      <JsonBlock label="Trace metadata" value={trace.metadata} />
      <Tabs
        label="About this trace"
        tabs={[
          { id: 'evaluations', label: 'Evaluations', render: () => <TraceEvaluations traceId={trace.id} /> },
          { id: 'feedback', label: 'Feedback', render: () => <TraceFeedback traceId={trace.id} /> },
          { id: 'clusters', label: 'Failure clusters', render: () => <TraceClusters traceId={trace.id} /> },
          { id: 'actions', label: 'Control actions', render: () => <TraceActions traceId={trace.id} /> },
        ]}
      />
    </>
  );
}

import { useMemo } from 'react';
import { Link } from 'react-router';
import { useApi } from '../../api/useApi';
import { Fact } from '../../ui/Fact';
import { DetailState } from '../../ui/lists';
import { formatCost, formatCount, formatDuration, formatTime } from '../format';
import { spanForest } from '../spanTree';
import { loadTree, type TraceTree } from '../view/api';
import { PayloadView } from '../view/PayloadView';
import { Problems } from '../view/TraceRelated';
import '../view/traceView.css';

const OUTLINE_SPANS = 40;

/**
 * A trace beside the list (read-only): its facts, problems, input and output, and the outline of its
 * spans, with a link to the full trace view. Its own chunk: the list's first page does not wait for it.
 */
export function TracePeek({ id, listQuery, onClose }: { id: string; listQuery: string; onClose: () => void }) {
  const trace = useApi(`trace-tree:${id}`, (signal) => loadTree(id, signal));
  return (
    <aside className="trace-peek" aria-labelledby="peek-title">
      <div className="peek-head">
        <h2 id="peek-title">{trace.data ? trace.data.name || '(unnamed trace)' : 'Trace'}</h2>
        <button type="button" onClick={onClose} aria-keyshortcuts="Escape">
          Close<span className="visually-hidden"> the trace panel</span>
        </button>
      </div>
      <DetailState state={trace} title="Trace" loading="Loading the trace…" />
      {trace.data && <PeekBody trace={trace.data} listQuery={listQuery} />}
    </aside>
  );
}

function PeekBody({ trace, listQuery }: { trace: TraceTree; listQuery: string }) {
  const forest = useMemo(() => spanForest(trace.spans), [trace.spans]);
  const shown = forest.nodes.slice(0, OUTLINE_SPANS);
  return (
    <>
      <p>
        <Link to={`/traces/${trace.id}`} state={{ list: listQuery }}>
          Open full view
        </Link>
      </p>
      <dl className="facts">
        <Fact term="Started" value={formatTime(trace.started_at)} />
        <Fact term="Latency" value={formatDuration(trace.latency_ms)} />
        <Fact term="Tokens" value={formatCount(trace.total_token_count)} />
        <Fact term="Cost" value={formatCost(trace.cost)} />
        <Fact term="Model" value={trace.model || '—'} />
        <Fact term="Spans" value={formatCount(trace.span_count)} />
      </dl>
      <Problems error={trace.error} failureTypes={trace.failure_types} />
      <PayloadView label="Input" text={trace.input} />
      <PayloadView label="Output" text={trace.output} />
      <h3>Spans</h3>
      <ul className="peek-spans">
        {shown.map(({ span, depth }) => (
          <li key={span.id} style={{ paddingLeft: `${depth * 1}rem` }}>
            <span className="muted">{span.type}</span> {span.name}{' '}
            <span className="muted">{formatDuration(Math.max(0, Date.parse(span.end_time) - Date.parse(span.start_time)))}</span>
            {span.error !== null && <span className="badge error">error</span>}
          </li>
        ))}
      </ul>
      {forest.nodes.length > shown.length && <p className="muted">and {formatCount(forest.nodes.length - shown.length)} more spans in the full view.</p>}
    </>
  );
}

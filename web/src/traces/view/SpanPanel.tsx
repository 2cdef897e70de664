import { useApi } from '../../api/useApi';
import { CopyText } from '../../ui/CopyText';
import { ErrorNotice } from '../../ui/ErrorNotice';
import { Fact } from '../../ui/Fact';
import { JsonBlock } from '../../ui/Payload';
import { formatCost, formatCount, formatDuration, formatTime } from '../format';
import { loadSpan, type TraceTreeSpan } from './api';
import { PayloadView } from './PayloadView';
import { Problems } from './TraceRelated';

/**
 * The open span: what the tree knows at once, then its input, output and metadata, fetched when
 * it is opened (a trace's tree leaves them out: they are most of its bytes).
 */
export function SpanPanel({ traceId, span }: { traceId: string; span: TraceTreeSpan }) {
  const full = useApi(`span:${traceId}:${span.id}`, (signal) => loadSpan(traceId, span.id, signal));
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
      {full.error !== undefined && <ErrorNotice error={full.error} />}
      {full.loading && <p aria-live="polite">Loading the span&rsquo;s input and output ({formatCount(span.input_chars + span.output_chars)} characters)…</p>}
      {full.data && (
        <>
          <div className="io">
            <PayloadView label="Span input" text={full.data.input} />
            <PayloadView label="Span output" text={full.data.output} />
          </div>
          <JsonBlock label="Span metadata" value={full.data.metadata} />
        </>
      )}
    </section>
  );
}

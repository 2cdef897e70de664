import { Counter } from 'prom-client';
import { metricsRegistry } from '../../../platform/metrics.js';

/**
 * The process's ingest counts for GET /metrics, moved by the same events as the Postgres counts
 * (stats/counters.ts) but without a tenant label: cardinality stays bounded by source and reason.
 */
const counter = (name: string, help: string, labelNames: readonly string[]) =>
  new Counter({ name: `looptrace_ingest_${name}`, help, labelNames, registers: [metricsRegistry] });

export const ingestCounters = {
  tracesReceived: counter('traces_received_total', 'Traces in ingest requests (native and OTLP, HTTP and gRPC)', ['source']),
  tracesStored: counter('traces_stored_total', 'Traces acknowledged and readable (OTLP: once per request a trace appears in)', ['source']),
  spansReceived: counter('spans_received_total', 'Spans in ingest requests', ['source']),
  spansStored: counter('spans_stored_total', 'Spans acknowledged and readable', ['source']),
  spansRefused: counter('spans_refused_total', 'Spans refused, by reason (received = stored + refused)', ['source', 'reason']),
};

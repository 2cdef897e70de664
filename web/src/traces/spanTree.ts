import type { Ok } from '../api/client';

export type TraceDetail = Ok<'/v1/traces/{id}'>;
export type Span = TraceDetail['spans'][number];

export interface SpanRow {
  span: Span;
  depth: number;
  /** Where the span sits on the trace's time line, in percent of the trace's duration. */
  offset: number;
  width: number;
}

/**
 * The spans in tree order (each parent before its children, siblings by start time), with their
 * place on the waterfall. A span whose parent is not in the trace is shown as a root.
 */
export function spanRows(spans: Span[]): { rows: SpanRow[]; durationMs: number } {
  const ids = new Set(spans.map((s) => s.id));
  const children = new Map<string | null, Span[]>();
  for (const span of spans) {
    const parent = span.parent_span_id && ids.has(span.parent_span_id) ? span.parent_span_id : null;
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  const start = Math.min(...spans.map((s) => Date.parse(s.start_time)));
  const end = Math.max(...spans.map((s) => Date.parse(s.end_time)));
  const durationMs = Math.max(end - start, 0);
  const scale = (ms: number) => (durationMs === 0 ? 0 : (ms / durationMs) * 100);

  const rows: SpanRow[] = [];
  const visit = (parent: string | null, depth: number) => {
    const siblings = (children.get(parent) ?? []).sort((a, b) => Date.parse(a.start_time) - Date.parse(b.start_time));
    for (const span of siblings) {
      const from = Date.parse(span.start_time) - start;
      const to = Date.parse(span.end_time) - start;
      rows.push({ span, depth, offset: scale(from), width: Math.max(scale(to - from), 0.5) });
      visit(span.id, depth + 1);
    }
  };
  visit(null, 0);
  return { rows, durationMs };
}

import { addTextTokens } from '../../platform/text-tokens.js';
import type { SpanRow, TraceRow, TraceTokenRow } from './rows.js';

/**
 * A trace row that moved to an earlier start (an OTLP trace whose root span came after its
 * children): its token rows at the old key are copied to the new one, with the new row's version.
 */
export interface TokenMove {
  tenant_id: string;
  project_id: string;
  trace_id: string;
  from: string;
  to: string;
  version: number;
}

/** What a commit writes to `trace_tokens` for the rows it writes (writer.ts). */
export interface TokenWrites {
  rows: TraceTokenRow[];
  moves: TokenMove[];
}

type Text = Pick<SpanRow, 'name' | 'input' | 'output' | 'error'>;

const keyOf = (tenantId: string, traceId: string) => `${tenantId}|${traceId}`;

function addRowTokens(into: Set<string>, row: Text): void {
  addTextTokens(into, row.name);
  addTextTokens(into, row.input);
  addTextTokens(into, row.output);
  if (row.error !== null) addTextTokens(into, row.error);
}

/**
 * The token rows of a commit: for each trace row it writes, the distinct tokens of that row's
 * text and of the commit's spans of the trace, at the row's key; for each tombstone (a row whose
 * start moved), a move of the older token rows to the new key. So the rows at a trace's current
 * key hold every token of every commit, which the search relies on (traces/search-candidates.ts).
 * Spans whose trace row is not rewritten (OTLP re-sends) add nothing: their tokens are stored.
 */
export function tokenWrites(batch: { spans: readonly SpanRow[]; traces: readonly TraceRow[] }): TokenWrites {
  const spansByTrace = new Map<string, SpanRow[]>();
  for (const span of batch.spans) {
    const key = keyOf(span.tenant_id, span.trace_id);
    const spans = spansByTrace.get(key);
    if (spans) spans.push(span);
    else spansByTrace.set(key, [span]);
  }
  const live = new Map(batch.traces.filter((t) => t.is_deleted === 0).map((t) => [keyOf(t.tenant_id, t.id), t]));
  const writes: TokenWrites = { rows: [], moves: [] };
  for (const trace of batch.traces) {
    const key = keyOf(trace.tenant_id, trace.id);
    const at = { tenant_id: trace.tenant_id, project_id: trace.project_id, trace_id: trace.id };
    if (trace.is_deleted === 1) {
      const moved = live.get(key);
      if (moved) writes.moves.push({ ...at, from: trace.started_at, to: moved.started_at, version: moved.version });
      continue;
    }
    const tokens = new Set<string>();
    addRowTokens(tokens, trace);
    for (const span of spansByTrace.get(key) ?? []) addRowTokens(tokens, span);
    writes.rows.push({ ...at, started_at: trace.started_at, tokens: [...tokens].join(' '), version: trace.version });
  }
  return writes;
}

import type { ClickHouseStore } from '../../stores/clickhouse.js';
import type { RowBatch } from './batcher.js';
import { SPAN_COLUMNS, TRACE_COLUMNS, type TraceRow } from './rows.js';

/** Writes one group commit: spans first, so a trace row is never visible without its spans. */
export async function writeTraceBatch(ch: ClickHouseStore, batch: Pick<RowBatch, 'traces' | 'spans'>): Promise<void> {
  await ch.insert('spans', batch.spans, SPAN_COLUMNS);
  await writeTraceRows(ch, batch.traces);
}

export async function writeTraceRows(ch: ClickHouseStore, traces: readonly TraceRow[]): Promise<void> {
  await ch.insert('traces', traces, TRACE_COLUMNS);
}

import type { ClickHouseStore } from '../../stores/clickhouse.js';
import type { RowBatch } from './batcher.js';
import { SPAN_INSERT_COLUMNS, TRACE_INSERT_COLUMNS } from './rows.js';

/** Writes one group commit's rows: spans first, so a trace row is never visible without its spans. */
export async function writeTraceBatch(ch: ClickHouseStore, batch: Pick<RowBatch, 'traces' | 'spans'>): Promise<void> {
  if (batch.spans.length > 0) await ch.insert('spans', batch.spans, SPAN_INSERT_COLUMNS);
  if (batch.traces.length > 0) await ch.insert('traces', batch.traces, TRACE_INSERT_COLUMNS);
}

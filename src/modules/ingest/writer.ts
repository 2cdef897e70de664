import type { ClickHouseStore } from '../../stores/clickhouse.js';
import type { RowBatch } from './batcher.js';
import { SPAN_INSERT_COLUMNS, TRACE_INSERT_COLUMNS } from './rows.js';
import { traceTokensRepository, type StoredTraceKey } from './tokens-repo.js';
import { tokenWrites } from './tokens.js';

/**
 * Writes one group commit's rows: spans first, then the traces' search tokens, then the trace
 * rows, so a trace row is never visible without its spans nor missed by a search.
 * `storedSpansOf`: rows derived from spans an earlier commit stored, whose tokens come from those.
 */
export async function writeTraceBatch(
  ch: ClickHouseStore,
  batch: Pick<RowBatch, 'traces' | 'spans'> & { storedSpansOf?: readonly StoredTraceKey[] },
): Promise<void> {
  if (batch.spans.length > 0) await ch.insert('spans', batch.spans, SPAN_INSERT_COLUMNS);
  const tokens = traceTokensRepository(ch);
  await tokens.write(tokenWrites(batch));
  await tokens.fromStoredSpans(batch.storedSpansOf ?? []);
  if (batch.traces.length > 0) await ch.insert('traces', batch.traces, TRACE_INSERT_COLUMNS);
}

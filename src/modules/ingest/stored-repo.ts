import type { ClickHouseStore } from '../../stores/clickhouse.js';

/**
 * What ClickHouse holds of some traces of one tenant: the ground truth a pending reservation is
 * settled against. Read from the primary: a replica that lags would have settlement release (or
 * delete the spans of) traces that are stored.
 */
export function storedTraceRepository(ch: ClickHouseStore) {
  const ids = async (name: string, query: string, tenantId: string, traceIds: readonly string[]) => {
    if (traceIds.length === 0) return new Set<string>();
    const rows = await ch.rowsFromPrimary<{ id: string }>(name, query, { tenant: tenantId, ids: traceIds });
    return new Set(rows.map((r) => r.id));
  };
  return {
    /** Traces whose trace row is written. Spans are written before it, so these are complete. */
    withTraceRow: (tenantId: string, traceIds: readonly string[]) =>
      ids('ingest.settle.traces', 'SELECT DISTINCT id FROM traces WHERE tenant_id = {tenant:UUID} AND id IN {ids:Array(UUID)}', tenantId, traceIds),

    /** Traces with at least one span written. */
    withSpans: (tenantId: string, traceIds: readonly string[]) =>
      ids(
        'ingest.settle.spans',
        'SELECT DISTINCT trace_id AS id FROM spans WHERE tenant_id = {tenant:UUID} AND trace_id IN {ids:Array(UUID)}',
        tenantId,
        traceIds,
      ),

    /**
     * Spans and search tokens of native traces whose trace row never followed (the process died
     * between the inserts of a group commit). They go before the id is released: a retry may carry
     * spans with server-generated ids, which would otherwise sit beside these in the trace.
     */
    async deleteWritten(tenantId: string, traceIds: readonly string[]): Promise<void> {
      if (traceIds.length === 0) return;
      const params = { tenant: tenantId, ids: traceIds };
      await ch.command('ingest.settle.delete_spans', 'DELETE FROM spans WHERE tenant_id = {tenant:UUID} AND trace_id IN {ids:Array(UUID)}', params);
      await ch.command('ingest.settle.delete_tokens', 'DELETE FROM trace_tokens WHERE tenant_id = {tenant:UUID} AND trace_id IN {ids:Array(UUID)}', params);
    },
  };
}

export type StoredTraceRepository = ReturnType<typeof storedTraceRepository>;

import { observeStoreCall } from '../../platform/metrics.js';
import { millisToClickHouse } from '../../platform/time.js';
import type { Sql } from '../../stores/pg.js';
import type { TraceLocation } from './repo.js';

/** A registered trace's location and how it came in: through native ingest or OTLP. */
export interface LocatedTrace extends TraceLocation {
  source: 'native' | 'otlp';
}

/**
 * Read side of the trace registry (Postgres; written by ingest). It answers "does this tenant have
 * this trace, and where in ClickHouse is it" with one primary-key lookup, so a trace read can use
 * the traces sorting key instead of searching every project of the tenant.
 */
export function traceLocator(sql: Sql) {
  return {
    async locate(tenantId: string, traceId: string): Promise<LocatedTrace | undefined> {
      const [row] = await observeStoreCall('postgres', 'traces.locate', () => sql<{ project_id: string; started_at: Date; source: 'native' | 'otlp' }[]>`
        select project_id, started_at, source from trace_registry where tenant_id = ${tenantId} and trace_id = ${traceId}`);
      return row ? { projectId: row.project_id, startedAt: millisToClickHouse(row.started_at.getTime()), source: row.source } : undefined;
    },

    /** The project of each of `traceIds` the tenant has; the others are absent from the map. */
    async projectsByTrace(tenantId: string, traceIds: readonly string[]): Promise<Map<string, string>> {
      const rows = await observeStoreCall('postgres', 'traces.locate_many', () => sql<{ trace_id: string; project_id: string }[]>`
        select trace_id, project_id from trace_registry where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[])`);
      return new Map(rows.map((r) => [r.trace_id, r.project_id]));
    },
  };
}

export type TraceLocator = ReturnType<typeof traceLocator>;

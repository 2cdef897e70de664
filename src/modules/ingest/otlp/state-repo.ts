import { observeStoreCall } from '../../../platform/metrics.js';
import type { Sql, TxSql } from '../../../stores/pg.js';
import type { OtlpTraceState } from './trace-state.js';

export interface TraceKey {
  tenantId: string;
  traceId: string;
}

/** A registry row as a group commit finds it, locked until the commit ends. */
export interface LockedTrace extends TraceKey {
  projectId: string;
  committed: boolean;
  /** The registry's locator: where the trace's row was last written. */
  startedAtMs: number;
  state: OtlpTraceState | null;
}

/** The state a group commit leaves on an OTLP trace's registry row. */
export interface SavedTrace extends TraceKey {
  projectId: string;
  /** The trace row's start (ms): the registry's locator follows it. */
  startedAtMs: number;
  state: OtlpTraceState;
  /**
   * A new row was written (not only a re-send): the trace is readable anew, and save() moving
   * rolled_up_at makes the trigger queue_readable_traces_for_rules_on_update queue it for eval and
   * failure rules (sql/009_failures.sql, named in sql/024_trigger_names.sql).
   */
  changed: boolean;
}

const byKey = <T extends TraceKey>(rows: readonly T[]) =>
  [...rows].sort((a, b) => (a.tenantId === b.tenantId ? (a.traceId < b.traceId ? -1 : 1) : a.tenantId < b.tenantId ? -1 : 1));

/**
 * SQL of the per-trace state of OTLP traces, kept on their registry rows (`trace_registry.otlp_state`,
 * sql/022). A group commit locks the rows of the traces it touches for its whole length, so commits
 * of other processes that touch the same trace fold one after the other, never from the same state.
 */
export function otlpStateRepository(sql: Sql) {
  return {
    transaction<T>(work: (tx: TxSql) => Promise<T>): Promise<T> {
      return sql.begin(work) as Promise<T>;
    },

    /** Locks the registry rows of these traces (in key order: no deadlock between commits) and reads their state. */
    async lock(tx: TxSql, keys: readonly TraceKey[]): Promise<LockedTrace[]> {
      if (keys.length === 0) return [];
      const sorted = byKey(keys);
      const rows = await observeStoreCall('postgres', 'ingest.otlp_lock', () => tx<{ tenant_id: string; trace_id: string; project_id: string; state: string; ms: number; otlp_state: OtlpTraceState | null }[]>`
        select r.tenant_id, r.trace_id, r.project_id, r.state, round(extract(epoch from r.started_at) * 1000)::float8 as ms, r.otlp_state
        from trace_registry r
        join unnest(${sorted.map((k) => k.tenantId)}::uuid[], ${sorted.map((k) => k.traceId)}::uuid[]) as k(tenant_id, trace_id)
          on r.tenant_id = k.tenant_id and r.trace_id = k.trace_id
        order by r.tenant_id, r.trace_id
        for update of r`);
      return rows.map((r) => ({ tenantId: r.tenant_id, traceId: r.trace_id, projectId: r.project_id, committed: r.state === 'committed', startedAtMs: Number(r.ms), state: r.otlp_state }));
    },

    /**
     * Commits the traces with their new state in one statement. A row that is missing was released
     * by a settlement that took this write for dead: it is registered again and comes back as
     * restored, so that its quota is counted.
     */
    async save(tx: TxSql, traces: readonly SavedTrace[], writer: string): Promise<{ tenantId: string; restored: number }[]> {
      if (traces.length === 0) return [];
      const sorted = byKey(traces);
      const rows = await observeStoreCall('postgres', 'ingest.otlp_save', () => tx<{ tenant_id: string; restored: boolean }[]>`
        insert into trace_registry as r (tenant_id, trace_id, project_id, started_at, source, state, writer, spans_at, rolled_up_at, otlp_state)
        select t.tenant_id, t.trace_id, t.project_id, to_timestamp(t.ms / 1000.0), 'otlp', 'committed', ${writer},
               case when t.changed::bool then now() end, case when t.changed::bool then now() end, t.state::jsonb
        from unnest(
          ${sorted.map((t) => t.tenantId)}::uuid[], ${sorted.map((t) => t.traceId)}::uuid[], ${sorted.map((t) => t.projectId)}::uuid[],
          ${sorted.map((t) => t.startedAtMs)}::float8[], ${sorted.map((t) => JSON.stringify(t.state))}::text[], ${sorted.map((t) => (t.changed ? 'true' : 'false'))}::text[]
        ) as t(tenant_id, trace_id, project_id, ms, state, changed)
        on conflict (tenant_id, trace_id) do update
          set state = 'committed', started_at = excluded.started_at, otlp_state = excluded.otlp_state,
              spans_at = coalesce(excluded.spans_at, r.spans_at),
              rolled_up_at = coalesce(excluded.rolled_up_at, r.rolled_up_at)
          where r.source = 'otlp'
        returning r.tenant_id, (r.xmax = 0) as restored`);
      const restored = new Map<string, number>();
      for (const row of rows) if (row.restored) restored.set(row.tenant_id, (restored.get(row.tenant_id) ?? 0) + 1);
      return [...restored].map(([tenantId, n]) => ({ tenantId, restored: n }));
    },
  };
}

export type OtlpStateRepository = ReturnType<typeof otlpStateRepository>;

import type { Sql, TxSql } from '../../stores/pg.js';

export interface SignalRow {
  id: string;
  tenant_id: string;
  project_id: string;
  trace_id: string;
  failure_type: string | null;
  cluster_signature: string | null;
  eval_rule_id: string | null;
  at: Date;
}

export type NewSignal = Omit<SignalRow, 'at'>;

/** The control loop's own outbox of trigger signals (sql/018_control_signals.sql). */
export function controlSignalRepository(sql: Sql) {
  return {
    async insert(tx: TxSql, signals: readonly NewSignal[]): Promise<void> {
      if (signals.length === 0) return;
      await tx`insert into control_signals ${tx(signals as NewSignal[])} on conflict do nothing`;
    },

    async ready(limit: number): Promise<SignalRow[]> {
      return sql<SignalRow[]>`
        select id, tenant_id, project_id, trace_id, failure_type, cluster_signature, eval_rule_id, at
        from control_signals where ready_at <= now() order by ready_at, id limit ${limit}`;
    },

    async remove(ids: readonly string[]): Promise<void> {
      if (ids.length > 0) await sql`delete from control_signals where id = any(${ids as string[]}::uuid[])`;
    },

    /** Signals whose trace is still being scored: looked at again in a few seconds. */
    async defer(ids: readonly string[], seconds: number): Promise<void> {
      if (ids.length === 0) return;
      await sql`update control_signals set ready_at = now() + make_interval(secs => ${seconds}) where id = any(${ids as string[]}::uuid[])`;
    },

    /** Data-subject erasure: signals about these traces. */
    async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
      const rows = await sql`delete from control_signals where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[]) returning id`;
      return rows.length;
    },
  };
}

export type ControlSignalRepository = ReturnType<typeof controlSignalRepository>;

import type { Sql, TxSql } from '../../stores/pg.js';
import type { ActionStatus, EscalationReason, ListActionsQuery, StepType } from './schemas.js';

export interface ActionRow {
  id: string;
  tenant_id: string;
  project_id: string;
  trace_id: string;
  span_id: string | null;
  policy_id: string;
  chain_id: string;
  parent_id: string | null;
  step_index: number;
  type: StepType;
  status: ActionStatus;
  require_approval: boolean;
  escalation_reason: EscalationReason | null;
  metadata: Record<string, unknown>;
  input: string | null;
  output: string | null;
  model: string | null;
  provider: 'openai' | 'anthropic' | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  latency_ms: number | null;
  cost: number | null;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  executed_at: Date | null;
  settled_at: Date | null;
  decided_by: string | null;
  decided_at: Date | null;
}

export type NewAction = Pick<
  ActionRow,
  'id' | 'project_id' | 'trace_id' | 'policy_id' | 'chain_id' | 'parent_id' | 'step_index' | 'type' | 'status' | 'require_approval' | 'escalation_reason' | 'metadata' | 'model' | 'provider'
>;

export interface ExecutionOutcome {
  span_id: string | null;
  input: string | null;
  output: string | null;
  model: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  latency_ms: number | null;
  cost: number;
  error: string | null;
}

export function controlActionRepository(sql: Sql) {
  return {
    begin<T>(work: (tx: TxSql) => Promise<T>): Promise<T> {
      return sql.begin(work) as Promise<T>;
    },

    /** Serializes the gate decisions of one trace: its counts and the action they allow are one step. */
    async lockTrace(tx: TxSql, tenantId: string, traceId: string): Promise<void> {
      await tx`select pg_advisory_xact_lock(hashtextextended(${`control:${tenantId}:${traceId}`}, 0))`;
    },

    /** Actions on a trace that count against the gates (a rejected one never ran, so it does not). */
    async counts(tx: TxSql, tenantId: string, traceId: string): Promise<{ retries: number; remediations: number }> {
      const [row] = await tx<{ retries: number; remediations: number }[]>`
        select (count(*) filter (where type = 'retry'))::int as retries, (count(*) filter (where type <> 'escalate'))::int as remediations
        from control_actions where tenant_id = ${tenantId} and trace_id = ${traceId} and status <> 'rejected'`;
      return row!;
    },

    /** Escalations need no judging, so they are stored settled. Null when the chain already had this action. */
    async insert(tx: TxSql, tenantId: string, a: NewAction): Promise<ActionRow | undefined> {
      const [row] = await tx<ActionRow[]>`
        insert into control_actions ${tx({ ...a, tenant_id: tenantId, metadata: tx.json(a.metadata as never), settled_at: a.type === 'escalate' ? new Date() : null })}
        on conflict do nothing returning *`;
      return row;
    },

    async find(tenantId: string, id: string): Promise<ActionRow | undefined> {
      const [row] = await sql<ActionRow[]>`select * from control_actions where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    async chainModels(tenantId: string, chainId: string): Promise<string[]> {
      // The route's name for the model: the vendor may report another one (a dated version) in `model`.
      const rows = await sql<{ model: string }[]>`
        select metadata->>'route_model' as model from control_actions
        where tenant_id = ${tenantId} and chain_id = ${chainId} and type = 'fallback_model' and metadata ? 'route_model'`;
      return rows.map((r) => r.model);
    },

    async list(tenantId: string, q: ListActionsQuery, after: { createdAt: Date; id: string } | null): Promise<ActionRow[]> {
      return sql<ActionRow[]>`
        select * from control_actions
        where tenant_id = ${tenantId}
          ${q.status ? sql`and status = ${q.status}` : sql``}
          ${q.type ? sql`and type = ${q.type}` : sql``}
          ${q.trace_id ? sql`and trace_id = ${q.trace_id}` : sql``}
          ${q.from ? sql`and created_at >= ${q.from}::timestamptz` : sql``}
          ${q.to ? sql`and created_at <= ${q.to}::timestamptz` : sql``}
          ${after ? sql`and (created_at, id) < (${after.createdAt}, ${after.id})` : sql``}
        order by created_at desc, id desc
        limit ${q.limit + 1}`;
    },

    /** Takes a runnable action (queued, approved, or left running by a dead worker); whoever gets the row owns it. */
    async claim(id: string, staleBefore: Date): Promise<ActionRow | undefined> {
      const [row] = await sql<ActionRow[]>`
        update control_actions set status = 'running', started_at = now()
        where id = ${id} and type <> 'escalate'
          and (status in ('pending', 'approved') or (status = 'running' and started_at < ${staleBefore}))
        returning *`;
      return row;
    },

    async finish(id: string, o: ExecutionOutcome): Promise<void> {
      await sql`
        update control_actions set status = ${o.error === null ? 'executed' : 'failed'}, span_id = ${o.span_id}, input = ${o.input},
          output = ${o.output}, model = coalesce(${o.model}, model), prompt_tokens = ${o.prompt_tokens}, completion_tokens = ${o.completion_tokens},
          latency_ms = ${o.latency_ms}, cost = ${o.cost}, error = ${o.error}, executed_at = date_trunc('milliseconds', now())
        where id = ${id} and status = 'running'`;
    },

    async release(id: string): Promise<void> {
      await sql`update control_actions set status = 'pending' where id = ${id} and status = 'running'`;
    },

    async mergeMetadata(id: string, patch: Record<string, unknown>, settle = false): Promise<void> {
      await sql`update control_actions set metadata = metadata || ${sql.json(patch as never)}
                ${settle ? sql`, settled_at = now()` : sql``} where id = ${id}`;
    },

    /** An owner's decision on an action awaiting approval; undefined when it was not awaiting one. */
    async decide(tenantId: string, id: string, to: 'approved' | 'rejected', by: string): Promise<ActionRow | undefined> {
      const [row] = await sql<ActionRow[]>`
        update control_actions set status = ${to}, decided_by = ${by}, decided_at = date_trunc('milliseconds', now())
        where tenant_id = ${tenantId} and id = ${id} and status = 'pending_approval' returning *`;
      return row;
    },

    /** Ran, not yet judged: the scan compares their re-scores and decides what follows. */
    async unsettled(limit: number): Promise<ActionRow[]> {
      return sql<ActionRow[]>`
        select * from control_actions where settled_at is null and status in ('executed', 'failed')
        order by created_at limit ${limit}`;
    },

    /** Runnable actions whose job was lost (queued before pendingBefore) or whose worker died. */
    async stranded(pendingBefore: Date, runningBefore: Date, limit: number): Promise<{ id: string; tenant_id: string }[]> {
      return sql<{ id: string; tenant_id: string }[]>`
        select id, tenant_id from control_actions
        where settled_at is null and ((status in ('pending', 'approved') and coalesce(decided_at, created_at) < ${pendingBefore})
           or (status = 'running' and started_at < ${runningBefore}))
        order by created_at limit ${limit}`;
    },

    async executedRetries(tenantId: string, traceId: string): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from control_actions
        where tenant_id = ${tenantId} and trace_id = ${traceId} and type = 'retry' and status = 'executed'`;
      return row!.n;
    },

    async retryCapHits(tenantId: string, projectId: string, since: Date): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        select count(distinct trace_id)::int as n from control_actions
        where tenant_id = ${tenantId} and project_id = ${projectId} and escalation_reason = 'retry_threshold_exceeded' and created_at >= ${since}`;
      return row!.n;
    },

    /** Data-subject erasure: every action on these traces (their inputs and outputs with them). */
    async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
      const rows = await sql`delete from control_actions where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[]) returning id`;
      return rows.length;
    },
  };
}

export type ControlActionRepository = ReturnType<typeof controlActionRepository>;

import { usageMonth } from '../../platform/time.js';
import type { Sql, TxSql } from '../../stores/pg.js';
import type { EvalStatus, ListEvalsQuery } from './schemas.js';

export interface EvaluationRow {
  id: string;
  tenant_id: string;
  project_id: string;
  trace_id: string;
  metric_name: string;
  config: Record<string, unknown>;
  threshold: number;
  rule_id: string | null;
  eval_version_id: string | null;
  status: EvalStatus;
  score: number | null;
  passed: boolean | null;
  reasoning: string | null;
  error: string | null;
  judge_model: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  latency_ms: number | null;
  attempts: number;
  context: 'fresh' | 'remediation';
  source_action_id: string | null;
  original_evaluation_id: string | null;
  scored_output: string | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

/** What a new evaluation is created with; the rest (status, outcome, times) is the store's. */
export type NewEvaluation = Pick<EvaluationRow, 'id' | 'tenant_id' | 'project_id' | 'trace_id' | 'metric_name' | 'config' | 'threshold'> &
  Partial<Pick<EvaluationRow, 'rule_id' | 'eval_version_id' | 'context' | 'source_action_id' | 'original_evaluation_id' | 'scored_output'>>;

/** What scoring produced: a score, or the error that ended it, and the judge's usage. */
export type EvalOutcome = Pick<
  EvaluationRow,
  'score' | 'passed' | 'reasoning' | 'error' | 'judge_model' | 'prompt_tokens' | 'completion_tokens' | 'cost' | 'latency_ms'
>;

export interface WindowAggregate {
  count: number;
  avg_score: number | null;
  passed: number;
}


export function evaluationRepository(sql: Sql) {
  return {
    /**
     * Counts `n` evaluations against this month's quota, atomically: the row is only raised while
     * the total stays within `limit`. False (nothing counted) when it would exceed it.
     */
    async reserve(tenantId: string, n: number, limit: number | null, db: Sql | TxSql = sql): Promise<boolean> {
      const month = usageMonth(new Date());
      const rows = await db<{ evals: number }[]>`
        insert into eval_usage as u (tenant_id, month, evals)
        select ${tenantId}, ${month}, ${n} where ${limit}::bigint is null or ${n} <= ${limit}::bigint
        on conflict (tenant_id, month) do update set evals = u.evals + excluded.evals
          where ${limit}::bigint is null or u.evals + excluded.evals <= ${limit}::bigint
        returning evals`;
      return rows.length > 0;
    },

    async insertMany(rows: readonly NewEvaluation[], db: Sql | TxSql = sql): Promise<string[]> {
      if (rows.length === 0) return [];
      const values = rows.map((r) => ({
        id: r.id,
        tenant_id: r.tenant_id,
        project_id: r.project_id,
        trace_id: r.trace_id,
        metric_name: r.metric_name,
        config: db.json(r.config as never),
        threshold: r.threshold,
        rule_id: r.rule_id ?? null,
        eval_version_id: r.eval_version_id ?? null,
        context: r.context ?? 'fresh',
        source_action_id: r.source_action_id ?? null,
        original_evaluation_id: r.original_evaluation_id ?? null,
        scored_output: r.scored_output ?? null,
      }));
      // A rule scores a trace once: a second look at the same trace inserts nothing.
      const inserted = await db<{ id: string }[]>`
        insert into evaluations ${db(values)}
        on conflict (rule_id, trace_id) where rule_id is not null and context = 'fresh' do nothing
        returning id`;
      return inserted.map((r) => r.id);
    },

    begin<T>(work: (tx: TxSql) => Promise<T>): Promise<T> {
      return sql.begin(work) as Promise<T>;
    },

    /** Evaluations counted against the quota in the month of `now`. */
    async monthCount(tenantId: string, now: Date): Promise<number> {
      const [row] = await sql<{ evals: string }[]>`select evals from eval_usage where tenant_id = ${tenantId} and month = ${usageMonth(now)}`;
      return Number(row?.evals ?? 0);
    },

    async find(tenantId: string, id: string): Promise<EvaluationRow | undefined> {
      const [row] = await sql<EvaluationRow[]>`select * from evaluations where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    async list(tenantId: string, q: ListEvalsQuery, after: { createdAt: Date; id: string } | null): Promise<EvaluationRow[]> {
      return sql<EvaluationRow[]>`
        select * from evaluations
        where tenant_id = ${tenantId}
          ${q.trace_id ? sql`and trace_id = ${q.trace_id}` : sql``}
          ${q.metric_name ? sql`and metric_name = ${q.metric_name}` : sql``}
          ${q.status ? sql`and status = ${q.status}` : sql``}
          ${q.project_id ? sql`and project_id = ${q.project_id}` : sql``}
          ${q.rule_id ? sql`and rule_id = ${q.rule_id}` : sql``}
          ${q.source_action_id ? sql`and source_action_id = ${q.source_action_id}` : sql``}
          ${q.context ? sql`and context = ${q.context}` : sql``}
          ${q.from ? sql`and created_at >= ${q.from}::timestamptz` : sql``}
          ${q.to ? sql`and created_at <= ${q.to}::timestamptz` : sql``}
          ${after ? sql`and (created_at, id) < (${after.createdAt}, ${after.id})` : sql``}
        order by created_at desc, id desc
        limit ${q.limit + 1}`;
    },

    /**
     * Takes an evaluation for scoring: a pending one, or one left running by a worker that died
     * (started before `staleBefore`). Whoever gets the row back owns it.
     */
    async claim(id: string, staleBefore: Date): Promise<EvaluationRow | undefined> {
      const [row] = await sql<EvaluationRow[]>`
        update evaluations set status = 'running', started_at = now(), attempts = attempts + 1
        where id = ${id} and (status = 'pending' or (status = 'running' and started_at < ${staleBefore}))
        returning *`;
      return row;
    },

    async failPending(ids: readonly string[], reason: string, db: Sql | TxSql = sql): Promise<void> {
      await db`update evaluations set status = 'failed', error = ${reason}, completed_at = now()
               where id = any(${ids as string[]}::uuid[]) and status = 'pending'`;
    },

    /** Gives a claimed evaluation back (its scoring hit a store error and the job will retry). */
    async release(id: string): Promise<void> {
      await sql`update evaluations set status = 'pending' where id = ${id} and status = 'running'`;
    },

    /** True when this call finished it (it was still running). */
    async finish(id: string, outcome: EvalOutcome, db: Sql | TxSql = sql): Promise<boolean> {
      const rows = await db`
        update evaluations set
          status = ${outcome.error === null ? 'completed' : 'failed'},
          score = ${outcome.score}, passed = ${outcome.passed}, reasoning = ${outcome.reasoning}, error = ${outcome.error},
          judge_model = ${outcome.judge_model}, prompt_tokens = ${outcome.prompt_tokens},
          completion_tokens = ${outcome.completion_tokens}, cost = ${outcome.cost}, latency_ms = ${outcome.latency_ms},
          completed_at = now()
        where id = ${id} and status = 'running'
        returning id`;
      return rows.length > 0;
    },

    /**
     * Evaluations nobody is working on: pending since before `pendingBefore` (their job was lost
     * with Redis, or never queued) or running since before `runningBefore` (their worker died).
     */
    async stranded(pendingBefore: Date, runningBefore: Date, limit: number): Promise<{ id: string; tenant_id: string }[]> {
      return sql<{ id: string; tenant_id: string }[]>`
        select id, tenant_id from evaluations
        where (status = 'pending' and created_at < ${pendingBefore}) or (status = 'running' and started_at < ${runningBefore})
        order by created_at limit ${limit}`;
    },

    /** Of `traceIds`, those an eval rule may still score: waiting in the outbox, or a fresh evaluation pending or running. */
    async scoringOpen(tenantId: string, traceIds: readonly string[]): Promise<Set<string>> {
      const rows = await sql<{ trace_id: string }[]>`
        select trace_id from eval_candidates where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[])
        union
        select trace_id from evaluations
        where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[]) and context = 'fresh' and status in ('pending', 'running')`;
      return new Set(rows.map((r) => r.trace_id));
    },

    /** The completed fresh evaluations of a trace made by eval rules: what a remediation is re-scored against. */
    async ruleBaselines(tenantId: string, traceId: string): Promise<EvaluationRow[]> {
      return sql<EvaluationRow[]>`
        select * from evaluations
        where tenant_id = ${tenantId} and trace_id = ${traceId} and rule_id is not null and context = 'fresh' and status = 'completed'
        order by created_at`;
    },

    /** Completed evaluations of one metric created in [from, to]. */
    async window(tenantId: string, metric: string, projectId: string | undefined, from: string, to: string): Promise<WindowAggregate> {
      const [row] = await sql<WindowAggregate[]>`
        select count(*)::int as count, avg(score)::float8 as avg_score, (count(*) filter (where passed))::int as passed
        from evaluations
        where tenant_id = ${tenantId} and metric_name = ${metric} and status = 'completed'
          and created_at >= ${from}::timestamptz and created_at <= ${to}::timestamptz
          ${projectId ? sql`and project_id = ${projectId}` : sql``}`;
      return row!;
    },

    /** Data-subject requests: every evaluation of these traces (fresh and remediation), oldest first. */
    async ofTraces(tenantId: string, traceIds: readonly string[]): Promise<EvaluationRow[]> {
      return sql<EvaluationRow[]>`
        select * from evaluations where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[])
        order by created_at, id`;
    },

    async countOfTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from evaluations where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[])`;
      return row!.n;
    },

    /** Data-subject erasure: the evaluations of these traces and their place in the eval-rules outbox. */
    async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
      return sql.begin(async (tx) => {
        await tx`delete from eval_candidates where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[])`;
        const rows = await tx`delete from evaluations where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[]) returning id`;
        return rows.length;
      });
    },
  };
}

export type EvaluationRepository = ReturnType<typeof evaluationRepository>;

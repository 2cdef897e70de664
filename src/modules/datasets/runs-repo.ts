import type { Sql } from '../../stores/pg.js';
import type { ItemScore } from '../evals/schemas.js';
import type { RUN_STATUSES } from './schemas.js';

export interface EvalRunRow {
  id: string;
  tenant_id: string;
  dataset_id: string;
  eval_version_id: string;
  status: (typeof RUN_STATUSES)[number];
  item_count: number;
  completed_count: number;
  pass_count: number;
  fail_count: number;
  error_count: number;
  error_message: string | null;
  dispatch_count: number;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

/** An item of a run, as the run took it from the dataset. */
export interface RunItemRow {
  item_id: string;
  trace_id: string;
  span_id: string | null;
  expected: string | null;
}

export interface RunResultRow extends ItemScore {
  item_id: string;
  trace_id: string;
  span_id: string | null;
  created_at: Date;
}

/** A run whose job was re-added: BullMQ job id `<id>-<dispatch_count>`. */
export type DispatchedRun = Pick<EvalRunRow, 'id' | 'tenant_id' | 'dispatch_count'>;

type ScoredItem = ItemScore & { item_id: string };

/**
 * What a provider answered may hold what Postgres text cannot (NUL, a lone surrogate); a result
 * that could never be written would fail its chunk, and so the run, forever. A UTF-8 round trip
 * turns a lone surrogate into U+FFFD.
 */
const storableText = (s: string | null) => (s === null ? null : Buffer.from(s, 'utf8').toString('utf8').replaceAll('\u0000', ''));
const storable = (r: ScoredItem) => ({ ...r, reasoning: storableText(r.reasoning), error: storableText(r.error) });

export function runRepository(sql: Sql) {
  const leaseUntil = (leaseMs: number) => sql`now() + make_interval(secs => ${leaseMs / 1000})`;

  return {
    /**
     * The run and its items in one transaction: the items are those committed when it starts, at
     * most `maxItems` of them (the quota reserved), in id order. Undefined when the dataset is gone.
     */
    async create(tenantId: string, id: string, datasetId: string, versionId: string, maxItems: number): Promise<EvalRunRow | undefined> {
      return sql.begin(async (tx) => {
        const [dataset] = await tx`select id from datasets where tenant_id = ${tenantId} and id = ${datasetId} for share`;
        if (!dataset) return undefined;
        await tx`
          insert into eval_runs (id, tenant_id, dataset_id, eval_version_id, item_count)
          values (${id}, ${tenantId}, ${datasetId}, ${versionId}, 0)`;
        const copied = await tx`
          insert into eval_run_items (run_id, item_id, trace_id, span_id, expected)
          select ${id}, id, trace_id, span_id, expected from dataset_items
          where tenant_id = ${tenantId} and dataset_id = ${datasetId}
          order by id limit ${maxItems}`;
        const [run] = await tx<EvalRunRow[]>`update eval_runs set item_count = ${copied.count} where id = ${id} returning *`;
        return run;
      });
    },

    async find(tenantId: string, datasetId: string, id: string): Promise<EvalRunRow | undefined> {
      const [row] = await sql<EvalRunRow[]>`
        select * from eval_runs where tenant_id = ${tenantId} and dataset_id = ${datasetId} and id = ${id}`;
      return row;
    },

    /** Newest first. */
    async list(tenantId: string, datasetId: string, beforeId: string | null, limit: number): Promise<EvalRunRow[]> {
      return sql<EvalRunRow[]>`
        select * from eval_runs
        where tenant_id = ${tenantId} and dataset_id = ${datasetId} ${beforeId ? sql`and id < ${beforeId}` : sql``}
        order by id desc limit ${limit}`;
    },

    async results(runId: string, afterItemId: string | null, limit: number): Promise<RunResultRow[]> {
      return sql<RunResultRow[]>`
        select r.item_id, i.trace_id, i.span_id, r.score, r.passed, r.reasoning, r.error,
               r.prompt_tokens, r.completion_tokens, r.cost, r.latency_ms, r.created_at
        from eval_run_results r join eval_run_items i using (run_id, item_id)
        where r.run_id = ${runId} ${afterItemId ? sql`and r.item_id > ${afterItemId}` : sql``}
        order by r.item_id limit ${limit}`;
    },

    /** Takes the run for one worker: only an unfinished run whose lease is free or has lapsed. */
    async claim(tenantId: string, id: string, token: string, leaseMs: number): Promise<EvalRunRow | undefined> {
      const [row] = await sql<EvalRunRow[]>`
        update eval_runs set status = 'running', started_at = coalesce(started_at, now()),
          lease_token = ${token}, lease_expires_at = ${leaseUntil(leaseMs)}
        where tenant_id = ${tenantId} and id = ${id} and status in ('pending', 'running')
          and (lease_expires_at is null or lease_expires_at < now())
        returning *`;
      return row;
    },

    async renewLease(id: string, token: string, leaseMs: number): Promise<boolean> {
      const rows = await sql`update eval_runs set lease_expires_at = ${leaseUntil(leaseMs)} where id = ${id} and lease_token = ${token} returning id`;
      return rows.length > 0;
    },

    async releaseLease(id: string, token: string): Promise<void> {
      await sql`update eval_runs set lease_token = null, lease_expires_at = null where id = ${id} and lease_token = ${token}`;
    },

    /** Items without a result, in id order after `afterItemId`. */
    async unscoredItems(runId: string, afterItemId: string | null, limit: number): Promise<RunItemRow[]> {
      return sql<RunItemRow[]>`
        select i.item_id, i.trace_id, i.span_id, i.expected from eval_run_items i
        where i.run_id = ${runId} ${afterItemId ? sql`and i.item_id > ${afterItemId}` : sql``}
          and not exists (select 1 from eval_run_results r where r.run_id = i.run_id and r.item_id = i.item_id)
        order by i.item_id limit ${limit}`;
    },

    /**
     * Writes a chunk's results and advances the run's counters by what this statement actually
     * inserted, atomically: an item already scored (by a worker that died after committing, or
     * one running concurrently) is neither written nor counted twice. Renews the lease when it is
     * still `token`'s and says whether it is.
     */
    async recordResults(runId: string, token: string, results: readonly ScoredItem[], leaseMs: number): Promise<boolean> {
      const [run] = await sql<{ lease_held: boolean }[]>`
        with inserted as (
          insert into eval_run_results (run_id, item_id, score, passed, reasoning, error, prompt_tokens, completion_tokens, cost, latency_ms)
          select ${runId}, item_id, score, passed, reasoning, error, prompt_tokens, completion_tokens, cost, latency_ms
          from jsonb_to_recordset(${sql.json(results.map(storable))}) as t(
            item_id uuid, score float8, passed boolean, reasoning text, error text,
            prompt_tokens integer, completion_tokens integer, cost float8, latency_ms integer)
          on conflict (run_id, item_id) do nothing
          returning passed, error
        ), tally as (
          select count(*)::int as scored,
                 count(*) filter (where error is null and passed)::int as passed,
                 count(*) filter (where error is null and passed is not true)::int as failed,
                 count(*) filter (where error is not null)::int as errored
          from inserted
        )
        update eval_runs set
          completed_count = completed_count + tally.scored,
          pass_count = pass_count + tally.passed,
          fail_count = fail_count + tally.failed,
          error_count = error_count + tally.errored,
          lease_expires_at = case when lease_token = ${token} then ${leaseUntil(leaseMs)} else lease_expires_at end
        from tally
        where id = ${runId}
        returning coalesce(lease_token = ${token}, false) as lease_held`;
      return run?.lease_held ?? false;
    },

    /** Completes the run once every item has its result. */
    async complete(id: string, token: string): Promise<boolean> {
      const rows = await sql`
        update eval_runs set status = 'completed', completed_at = now(), lease_token = null, lease_expires_at = null
        where id = ${id} and lease_token = ${token} and completed_count = item_count
        returning id`;
      return rows.length > 0;
    },

    async fail(id: string, token: string, message: string): Promise<void> {
      await sql`
        update eval_runs set status = 'failed', error_message = ${message}, completed_at = now(), lease_token = null, lease_expires_at = null
        where id = ${id} and lease_token = ${token}`;
    },

    /**
     * Unfinished runs that no worker holds and that were last dispatched over `staleMs` ago get a
     * new dispatch number; the caller adds their jobs. Oldest dispatch first, at most `limit`.
     */
    async redispatchStale(staleMs: number, limit: number): Promise<DispatchedRun[]> {
      return sql<DispatchedRun[]>`
        update eval_runs set dispatch_count = dispatch_count + 1, dispatched_at = now()
        where id in (
          select id from eval_runs
          where status in ('pending', 'running') and dispatched_at < now() - make_interval(secs => ${staleMs / 1000})
            and (lease_expires_at is null or lease_expires_at < now())
          order by dispatched_at limit ${limit}
          for update skip locked)
        returning id, tenant_id, dispatch_count`;
    },

    /**
     * Data-subject erasure: the runs' copies of items taken from these traces, with their results
     * (foreign key on delete cascade). Each run's counters lose what those items counted, so
     * completed_count = item_count still says when an unfinished run is done. One statement: the
     * results it tallies are read from the snapshot the deletes start from.
     */
    async eraseItemsOfTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
      const rows = await sql<{ items: number }[]>`
        with gone as (
          delete from eval_run_items i using eval_runs r
          where r.id = i.run_id and r.tenant_id = ${tenantId} and i.trace_id = any(${traceIds as string[]}::uuid[])
          returning i.run_id, i.item_id
        ), tally as (
          select g.run_id, count(*)::int as items, count(res.item_id)::int as scored,
                 count(*) filter (where res.item_id is not null and res.error is null and res.passed)::int as passed,
                 count(*) filter (where res.item_id is not null and res.error is null and res.passed is not true)::int as failed,
                 count(*) filter (where res.error is not null)::int as errored
          from gone g left join eval_run_results res on res.run_id = g.run_id and res.item_id = g.item_id
          group by g.run_id
        )
        update eval_runs e set
          item_count = e.item_count - t.items, completed_count = e.completed_count - t.scored,
          pass_count = e.pass_count - t.passed, fail_count = e.fail_count - t.failed, error_count = e.error_count - t.errored
        from tally t where e.id = t.run_id
        returning t.items`;
      return rows.reduce((sum, r) => sum + r.items, 0);
    },
  };
}

export type RunRepository = ReturnType<typeof runRepository>;

import { KeyedBatcher } from '../../platform/keyed-batcher.js';
import { observeStoreCall } from '../../platform/metrics.js';
import { usageMonth } from '../../platform/time.js';
import type { Sql, TxSql } from '../../stores/pg.js';
import { addCounts } from './stats/repo.js';
import { emptyDelta, minuteOf } from './stats/types.js';

export type TraceSource = 'native' | 'otlp';

/** An OTLP trace whose row is owed a rebuild from its stored spans (sql/025_trace_rows_owed.sql). */
export interface OwedRow {
  tenantId: string;
  projectId: string;
  traceId: string;
  /** Exact to the microsecond (text): a settlement that owes the row again since moves it. */
  owedSince: string;
}

export interface RegistryEntry {
  traceId: string;
  startedAtMs: number;
  /** The trace's spans in the request, counted refused (quota) if the claim refuses it. */
  spans?: number;
}

/** A trace whose rows ride in a group commit: confirmed (or restored) in the registry once it commits. */
export interface Registration extends RegistryEntry {
  tenantId: string;
  projectId: string;
  source: TraceSource;
}

export interface Claim {
  /** Newly registered by this request and counted against the quota, in submission order. */
  accepted: string[];
  /** Already registered, by anyone. */
  taken: string[];
  /** The registry rows of the taken ids, read in the claim's transaction; a taken id without one was released meanwhile. */
  known: RegisteredTrace[];
  overQuota: string[];
}

export interface RegisteredTrace {
  traceId: string;
  projectId: string;
  source: TraceSource;
  state: 'pending' | 'committed';
}

/** A pending reservation whose writer is gone, or whose write is older than any write can take. */
export interface AbandonedReservation {
  tenantId: string;
  traceId: string;
  source: TraceSource;
  writer: string | null;
  startedAt: Date;
}

const uuids = (ids: readonly string[]) => ids as string[];

export interface ClaimOptions {
  quota: number | null;
  now: Date;
  source: TraceSource;
  writer: string;
}

interface ClaimRequest {
  tenantId: string;
  projectId: string;
  entries: readonly RegistryEntry[];
  options: ClaimOptions;
}

function selectRegistered(db: Sql | TxSql, tenantId: string, traceIds: readonly string[]): Promise<RegisteredTrace[]> {
  return observeStoreCall('postgres', 'ingest.registry_lookup', () => (db as TxSql)<RegisteredTrace[]>`
    select trace_id as "traceId", project_id as "projectId", source, state from trace_registry
    where tenant_id = ${tenantId} and trace_id = any(${uuids(traceIds)}::uuid[])`);
}

/**
 * One transaction for the claims of one tenant and month, in submission order: each id belongs
 * to the first request that names it, and the quota left is spent request by request.
 */
function claimBatch(sql: Sql, requests: readonly ClaimRequest[]): Promise<Claim[]> {
  const { tenantId } = requests[0]!;
  const month = usageMonth(requests[0]!.options.now);
  const rows = requests.flatMap((r) => r.entries.map((e) => ({ ...e, projectId: r.projectId, source: r.options.source, writer: r.options.writer })));
  return observeStoreCall('postgres', 'ingest.claim', () =>
    sql.begin(async (tx) => {
      const [usage] = await tx<{ traces: number }[]>`
        insert into trace_usage (tenant_id, month, traces) values (${tenantId}, ${month}, 0)
        on conflict (tenant_id, month) do update set traces = trace_usage.traces
        returning traces`;
      const inserted = await tx<{ trace_id: string }[]>`
        insert into trace_registry (tenant_id, trace_id, project_id, started_at, source, state, writer)
        select ${tenantId}, t.id, t.project_id, to_timestamp(t.ms / 1000.0), t.source, 'pending', t.writer
        from unnest(${rows.map((r) => r.traceId)}::uuid[], ${rows.map((r) => r.startedAtMs)}::float8[], ${rows.map((r) => r.projectId)}::uuid[],
                    ${rows.map((r) => r.source)}::text[], ${rows.map((r) => r.writer)}::uuid[]) as t(id, ms, project_id, source, writer)
        on conflict (tenant_id, trace_id) do nothing
        returning trace_id`;
      const unowned = new Set(inserted.map((r) => r.trace_id));
      let used = usage!.traces;
      const refusals: ReturnType<typeof emptyDelta>[] = [];
      const result = requests.map((r) => {
        const claim: Claim = { accepted: [], taken: [], known: [], overQuota: [] };
        for (const { traceId } of r.entries) {
          if (!unowned.delete(traceId)) claim.taken.push(traceId);
          else if (r.options.quota === null || used < r.options.quota) {
            claim.accepted.push(traceId);
            used += 1;
          } else claim.overQuota.push(traceId);
        }
        if (claim.overQuota.length > 0) {
          const over = new Set(claim.overQuota);
          const refusal = emptyDelta(tenantId, r.projectId, minuteOf(r.options.now.getTime()));
          refusal.refusedTraces.quota = over.size;
          const spans = r.entries.reduce((n, e) => n + (over.has(e.traceId) ? (e.spans ?? 0) : 0), 0);
          if (spans > 0) refusal.refusedSpans.quota = spans;
          refusals.push(refusal);
        }
        return claim;
      });
      const overQuota = result.flatMap((c) => c.overQuota);
      if (overQuota.length > 0) await tx`delete from trace_registry where tenant_id = ${tenantId} and trace_id = any(${overQuota}::uuid[])`;
      const taken = [...new Set(result.flatMap((c) => c.taken))];
      if (taken.length > 0) {
        const known = new Map((await selectRegistered(tx, tenantId, taken)).map((k) => [k.traceId, k]));
        for (const claim of result) claim.known = claim.taken.flatMap((id) => known.get(id) ?? []);
      }
      if (used > usage!.traces) {
        await tx`update trace_usage set traces = traces + ${used - usage!.traces} where tenant_id = ${tenantId} and month = ${month}`;
      }
      if (refusals.length > 0) await addCounts(tx, refusals);
      return result;
    }),
  );
}

/** SQL of the trace registry, the monthly trace usage and the ingest writers (Postgres). */
export function registryRepository(sql: Sql) {
  const claims = new KeyedBatcher<ClaimRequest, Claim>((_key, requests) => claimBatch(sql, requests));
  return {
    /**
     * Registers new trace ids as pending writes of `writer` and counts them against the monthly
     * quota. The usage row lock orders concurrent requests of a tenant, so the quota is never
     * overshot; the claims of one tenant and month that arrive while its previous transaction runs
     * are made together in the next one (claimBatch). Ids already registered come back as taken,
     * with their registry rows as the same transaction reads them (`known`);
     * ids past the quota as overQuota (their rows are not kept), and counted refused (`quota`) in
     * the ingest counts of `now`'s minute by that transaction, last.
     */
    claim(tenantId: string, projectId: string, entries: readonly RegistryEntry[], options: ClaimOptions): Promise<Claim> {
      return claims.submit(`${tenantId}|${usageMonth(options.now)}`, { tenantId, projectId, entries, options });
    },

    /**
     * After a group commit: every trace it carried is committed, in one statement. A row that is
     * missing was released by a settlement that took this write for dead (it outlived its
     * time-out): it is registered again, and comes back as restored so that its quota is counted.
     * Native traces only: OTLP traces are committed with their state (otlp/state-repo.ts).
     * Turning committed is what queues a trace for eval and failure rules: the triggers
     * queue_readable_traces_for_rules_on_insert/_on_update on trace_registry (sql/009_failures.sql,
     * named in sql/024_trigger_names.sql); commitPending() too.
     */
    async confirm(
      registrations: readonly Registration[],
      writer: string,
      alongside?: (tx: TxSql) => Promise<void>,
    ): Promise<{ tenantId: string; restored: number }[]> {
      if (registrations.length === 0) return [];
      const confirm = (db: Sql | TxSql) => observeStoreCall('postgres', 'ingest.confirm', () => (db as TxSql)<{ tenant_id: string; restored: boolean }[]>`
        insert into trace_registry as r (tenant_id, trace_id, project_id, started_at, source, state, writer)
        select t.tenant_id, t.trace_id, t.project_id, to_timestamp(t.ms / 1000.0), t.source, 'committed', ${writer}
        from unnest(
          ${registrations.map((r) => r.tenantId)}::uuid[], ${registrations.map((r) => r.traceId)}::uuid[],
          ${registrations.map((r) => r.projectId)}::uuid[], ${registrations.map((r) => r.startedAtMs)}::float8[],
          ${registrations.map((r) => r.source)}::text[]
        ) as t(tenant_id, trace_id, project_id, ms, source)
        on conflict (tenant_id, trace_id) do update
          set state = 'committed'
          where r.state = 'pending'
        returning r.tenant_id, (r.xmax = 0) as restored`);
      const rows = alongside
        ? await sql.begin(async (tx) => {
            const confirmed = await confirm(tx);
            await alongside(tx);
            return confirmed;
          })
        : await confirm(sql);
      const restored = new Map<string, number>();
      for (const row of rows) if (row.restored) restored.set(row.tenant_id, (restored.get(row.tenant_id) ?? 0) + 1);
      return [...restored].map(([tenantId, n]) => ({ tenantId, restored: n }));
    },

    /** Traces counted against the quota in the month of `now`. */
    async monthUsage(tenantId: string, now: Date): Promise<number> {
      const [row] = await sql<{ traces: string }[]>`select traces from trace_usage where tenant_id = ${tenantId} and month = ${usageMonth(now)}`;
      return Number(row?.traces ?? 0);
    },

    async countUsage(tenantId: string, traces: number, now: Date): Promise<void> {
      await sql`
        insert into trace_usage (tenant_id, month, traces) values (${tenantId}, ${usageMonth(now)}, ${traces})
        on conflict (tenant_id, month) do update set traces = trace_usage.traces + excluded.traces`;
    },

    /**
     * Pending reservations that no live write can still commit: their writer retired (restarted or
     * shut down) or is unknown, or they are older than `abandonAfterMs`. All of them, or those of
     * one tenant's `traceIds`.
     */
    async abandoned(
      options: { abandonAfterMs: number; limit: number; tenantId?: string; traceIds?: readonly string[] },
    ): Promise<AbandonedReservation[]> {
      const scope =
        options.tenantId === undefined
          ? sql``
          : sql`and r.tenant_id = ${options.tenantId} and r.trace_id = any(${uuids(options.traceIds ?? [])}::uuid[])`;
      return observeStoreCall('postgres', 'ingest.abandoned', () => sql<AbandonedReservation[]>`
        select r.tenant_id as "tenantId", r.trace_id as "traceId", r.source, r.writer, r.started_at as "startedAt"
        from trace_registry r left join ingest_writers w on w.id = r.writer
        where r.state = 'pending' ${scope}
          and (w.id is null or w.retired_at is not null
               or r.created_at < now() - make_interval(secs => ${options.abandonAfterMs / 1000}))
        order by r.created_at
        limit ${options.limit}`);
    },

    /** Settled as stored: pending → committed (an OTLP trace's row is then owed: its writer died before saving the trace's state). */
    async commitPending(tenantId: string, traceIds: readonly string[]): Promise<void> {
      if (traceIds.length === 0) return;
      await sql`
        with committed as (
          update trace_registry set state = 'committed', spans_at = case when source = 'otlp' then now() else spans_at end
          where tenant_id = ${tenantId} and trace_id = any(${uuids(traceIds)}::uuid[]) and state = 'pending'
          returning tenant_id, trace_id, source)
        insert into trace_rows_owed (tenant_id, trace_id)
        select tenant_id, trace_id from committed where source = 'otlp'
        on conflict (tenant_id, trace_id) do update set owed_since = excluded.owed_since`;
    },

    /**
     * Releases pending reservations (nothing of them is stored) and gives their quota back, to the
     * month each was counted in. Only the reservations named (same writer) go: a row that a
     * concurrent settlement already released, or that another request has claimed since, stays.
     */
    async releasePending(reservations: readonly AbandonedReservation[]): Promise<number> {
      if (reservations.length === 0) return 0;
      return sql.begin(async (tx) => {
        const released = await tx<{ tenant_id: string; created_at: Date }[]>`
          delete from trace_registry r
          using unnest(${reservations.map((x) => x.tenantId)}::uuid[], ${reservations.map((x) => x.traceId)}::uuid[],
                       ${reservations.map((x) => x.writer)}::uuid[]) as t(tenant_id, trace_id, writer)
          where r.tenant_id = t.tenant_id and r.trace_id = t.trace_id and r.writer is not distinct from t.writer and r.state = 'pending'
          returning r.tenant_id, r.created_at`;
        const byMonth = new Map<string, { tenantId: string; month: string; n: number }>();
        for (const row of released) {
          const month = usageMonth(row.created_at);
          const key = `${row.tenant_id}|${month}`;
          const entry = byMonth.get(key) ?? { tenantId: row.tenant_id, month, n: 0 };
          entry.n += 1;
          byMonth.set(key, entry);
        }
        for (const { tenantId, month, n } of byMonth.values()) {
          await tx`update trace_usage set traces = greatest(0, traces - ${n}) where tenant_id = ${tenantId} and month = ${month}`;
        }
        return released.length;
      });
    },

    /** This writer's reservations whose write failed: no write of ours can commit them any more. */
    async disown(tenantId: string, traceIds: readonly string[], writer: string): Promise<AbandonedReservation[]> {
      if (traceIds.length === 0) return [];
      return sql<AbandonedReservation[]>`
        update trace_registry set writer = null
        where tenant_id = ${tenantId} and trace_id = any(${uuids(traceIds)}::uuid[]) and state = 'pending' and writer = ${writer}
        returning tenant_id as "tenantId", trace_id as "traceId", source, writer, started_at as "startedAt"`;
    },

    /** OTLP traces whose last span commit (settled after its writer died) no row has been derived from yet, oldest first. */
    async owedRows(limit: number): Promise<OwedRow[]> {
      return observeStoreCall('postgres', 'ingest.owed_rows', () => sql<OwedRow[]>`
        select r.tenant_id as "tenantId", r.project_id as "projectId", r.trace_id as "traceId", o.owed_since::text as "owedSince"
        from trace_rows_owed o join trace_registry r on r.tenant_id = o.tenant_id and r.trace_id = o.trace_id
        order by o.owed_since
        limit ${limit}`);
    },

    /** These owed rows are rebuilt: each is forgotten unless a settlement owed it again since it was read. */
    async rowsRebuilt(owed: readonly OwedRow[]): Promise<void> {
      if (owed.length === 0) return;
      await sql`
        delete from trace_rows_owed o
        using unnest(${owed.map((x) => x.tenantId)}::uuid[], ${owed.map((x) => x.traceId)}::uuid[], ${owed.map((x) => x.owedSince)}::text[])
          as x(tenant_id, trace_id, owed_since)
        where o.tenant_id = x.tenant_id and o.trace_id = x.trace_id and o.owed_since = x.owed_since::timestamptz`;
    },

    /**
     * Data-subject erasure: the registry rows of these traces go (the monthly usage they counted
     * stays: the quota was used). Without its row a trace is unknown to every reader.
     */
    async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
      if (traceIds.length === 0) return 0;
      const rows = await sql`delete from trace_registry where tenant_id = ${tenantId} and trace_id = any(${uuids(traceIds)}::uuid[]) returning trace_id`;
      return rows.length;
    },

    /** A starting process: registered live, and every earlier process of its instance retired. */
    async registerWriter(id: string, instance: string): Promise<void> {
      await sql.begin(async (tx) => {
        await tx`update ingest_writers set retired_at = now() where instance = ${instance} and retired_at is null`;
        await tx`insert into ingest_writers (id, instance) values (${id}, ${instance})`;
      });
    },

    async retireWriter(id: string): Promise<void> {
      await sql`update ingest_writers set retired_at = now() where id = ${id} and retired_at is null`;
    },

    /** Retired writers with nothing pending left, retired before `olderThanMs` ago: forgotten. */
    async forgetRetiredWriters(olderThanMs: number): Promise<void> {
      await sql`
        delete from ingest_writers w
        where w.retired_at < now() - make_interval(secs => ${olderThanMs / 1000})
          and not exists (select 1 from trace_registry r where r.writer = w.id and r.state = 'pending')`;
    },

    /**
     * Retention: up to `limit` committed traces of the project that started before `cutoff`. A
     * pending one is left to its write's settlement and expires at a later sweep.
     */
    async expired(tenantId: string, projectId: string, cutoff: Date, limit: number): Promise<string[]> {
      const rows = await observeStoreCall('postgres', 'ingest.retention_expired', () => sql<{ trace_id: string }[]>`
        select trace_id from trace_registry
        where tenant_id = ${tenantId} and project_id = ${projectId} and started_at < ${cutoff} and state = 'committed'
        order by started_at
        limit ${limit}`);
      return rows.map((r) => r.trace_id);
    },

    /** The earliest start among each project's registered traces; absent from the map: none. */
    async oldest(tenantId: string, projectIds: readonly string[]): Promise<Map<string, Date>> {
      if (projectIds.length === 0) return new Map();
      // One index probe per project (trace_registry_project_started), not a scan of the tenant's traces.
      const rows = await sql<{ project_id: string; oldest: Date | null }[]>`
        select p.id as project_id,
               (select min(r.started_at) from trace_registry r where r.tenant_id = ${tenantId} and r.project_id = p.id) as oldest
        from unnest(${uuids(projectIds)}::uuid[]) as p(id)`;
      return new Map(rows.flatMap((r) => (r.oldest ? [[r.project_id, r.oldest] as const] : [])));
    },
  };
}

export type RegistryRepository = ReturnType<typeof registryRepository>;

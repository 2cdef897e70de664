import { observeStoreCall } from '../../platform/metrics.js';
import type { Sql } from '../../stores/pg.js';
import type { TokenPrice } from './prices.js';

export interface RegistryEntry {
  traceId: string;
  startedAtMs: number;
}

export interface Reservation {
  /** Trace ids now registered to this request, in submission order. */
  accepted: string[];
  duplicates: string[];
  overQuota: string[];
}

/** First day of the UTC month, the key of the usage counter. */
export const usageMonth = (now: Date): string => `${now.toISOString().slice(0, 7)}-01`;

export interface RegisteredTrace {
  traceId: string;
  projectId: string;
  source: 'native' | 'otlp';
}

export interface OtlpRegistration {
  /** Newly registered by this request (counted against the quota). */
  fresh: string[];
  /** Registered before, by any request: spans join the trace where it lives. */
  existing: RegisteredTrace[];
  overQuota: string[];
}

// A registry row whose ClickHouse write never happened (process died mid-request) may be claimed
// again after this long; younger rows may still be an in-flight write of the same id.
const ORPHAN_AFTER_SECONDS = 120;

export function ingestRepository(sql: Sql) {
  return {
    /**
     * Registers new trace ids (native unless `source` says otherwise) and counts them against the
     * monthly quota in one transaction.
     * The usage row lock orders concurrent requests of a tenant, so the quota is never overshot.
     * Ids already registered come back as duplicates (→ 409); ids past the quota as overQuota (→ 402).
     */
    async reserve(
      tenantId: string,
      projectId: string,
      entries: readonly RegistryEntry[],
      quota: number | null,
      now: Date,
      source: RegisteredTrace['source'] = 'native',
    ): Promise<Reservation> {
      return observeStoreCall('postgres', 'ingest.reserve', () =>
        sql.begin(async (tx) => {
          const month = usageMonth(now);
          const [usage] = await tx<{ traces: number }[]>`
            insert into trace_usage (tenant_id, month, traces) values (${tenantId}, ${month}, 0)
            on conflict (tenant_id, month) do update set traces = trace_usage.traces
            returning traces`;
          const ids = entries.map((e) => e.traceId);
          const inserted = await tx<{ trace_id: string }[]>`
            insert into trace_registry (tenant_id, trace_id, project_id, started_at, source)
            select ${tenantId}, t.id, ${projectId}, to_timestamp(t.ms / 1000.0), ${source}
            from unnest(${ids}::uuid[], ${entries.map((e) => e.startedAtMs)}::float8[]) as t(id, ms)
            on conflict (tenant_id, trace_id) do nothing
            returning trace_id`;
          const fresh = new Set(inserted.map((r) => r.trace_id));
          const remaining = quota === null ? Infinity : Math.max(0, quota - usage!.traces);
          const accepted: string[] = [];
          const overQuota: string[] = [];
          const duplicates: string[] = [];
          for (const id of ids) {
            if (!fresh.has(id)) duplicates.push(id);
            else if (accepted.length < remaining) accepted.push(id);
            else overQuota.push(id);
          }
          if (overQuota.length > 0) {
            await tx`delete from trace_registry where tenant_id = ${tenantId} and trace_id = any(${overQuota}::uuid[])`;
          }
          if (accepted.length > 0) {
            await tx`update trace_usage set traces = traces + ${accepted.length}
                     where tenant_id = ${tenantId} and month = ${month}`;
          }
          return { accepted, duplicates, overQuota };
        }),
      );
    },

    /**
     * OTLP: spans of a registered trace merge into it, so no id is a duplicate. Ids not yet
     * registered are reserved (source 'otlp') and counted against the quota like native ones; the
     * common case, every id already known, takes no lock. Known ids report where they live.
     */
    async registerOtlp(
      tenantId: string,
      projectId: string,
      entries: readonly RegistryEntry[],
      quota: number | null,
      now: Date,
    ): Promise<OtlpRegistration> {
      const lookup = (ids: readonly string[]) =>
        observeStoreCall('postgres', 'ingest.registry_lookup', () => sql<RegisteredTrace[]>`
          select trace_id as "traceId", project_id as "projectId", source from trace_registry
          where tenant_id = ${tenantId} and trace_id = any(${ids as string[]}::uuid[])`);
      const known = await lookup(entries.map((e) => e.traceId));
      const knownIds = new Set(known.map((k) => k.traceId));
      const unknown = entries.filter((e) => !knownIds.has(e.traceId));
      if (unknown.length === 0) return { fresh: [], existing: [...known], overQuota: [] };
      const claim = await this.reserve(tenantId, projectId, unknown, quota, now, 'otlp');
      // Duplicates here were registered by a concurrent request between the lookup and the claim.
      const raced = claim.duplicates.length > 0 ? await lookup(claim.duplicates) : [];
      return { fresh: claim.accepted, existing: [...known, ...raced], overQuota: claim.overQuota };
    },

    /** The OTLP rollup moved a trace's start (an earlier span arrived): keep the locator in step. */
    async relocateOtlp(tenantId: string, traceId: string, startedAtMs: number): Promise<void> {
      await sql`update trace_registry set started_at = to_timestamp(${startedAtMs} / 1000.0)
                where tenant_id = ${tenantId} and trace_id = ${traceId} and source = 'otlp'`;
    },

    /** Undoes a reservation whose ClickHouse write failed, so the client's retry is not a 409. */
    async release(tenantId: string, traceIds: readonly string[], now: Date): Promise<void> {
      if (traceIds.length === 0) return;
      await sql.begin(async (tx) => {
        const removed = await tx`
          delete from trace_registry where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[])
          returning trace_id`;
        await tx`update trace_usage set traces = greatest(0, traces - ${removed.length})
                 where tenant_id = ${tenantId} and month = ${usageMonth(now)}`;
      });
    },

    /** Registry rows old enough to be orphans of a crashed write: candidates for re-claiming. */
    async staleRegistrations(tenantId: string, traceIds: readonly string[]): Promise<string[]> {
      if (traceIds.length === 0) return [];
      const rows = await sql<{ trace_id: string }[]>`
        select trace_id from trace_registry
        where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[])
          and source = 'native' and created_at < now() - make_interval(secs => ${ORPHAN_AFTER_SECONDS})`;
      return rows.map((r) => r.trace_id);
    },

    async forget(tenantId: string, traceIds: readonly string[]): Promise<void> {
      if (traceIds.length === 0) return;
      await sql`delete from trace_registry where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[])`;
    },

    async monthlyUsage(tenantId: string, now: Date): Promise<number> {
      const [row] = await sql<{ traces: number }[]>`
        select traces from trace_usage where tenant_id = ${tenantId} and month = ${usageMonth(now)}`;
      return row?.traces ?? 0;
    },

    async priceOverrides(tenantId: string): Promise<Map<string, TokenPrice>> {
      const rows = await sql<{ model: string; input_per_token: number; output_per_token: number }[]>`
        select model, input_per_token, output_per_token from model_prices where tenant_id = ${tenantId}`;
      return new Map(rows.map((r) => [r.model, { inputPerToken: r.input_per_token, outputPerToken: r.output_per_token }]));
    },
  };
}

export type IngestRepository = ReturnType<typeof ingestRepository>;

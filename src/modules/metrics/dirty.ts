import { clickHouseToIso } from '../../platform/time.js';
import type { Sql, TxSql } from '../../stores/pg.js';
import { markDirtyMinutes, metricsDirtyRepository, type ClaimedMinute, type DirtyMinute, type MetricsDirtyRepository } from './dirty-repo.js';

export type { ClaimedMinute, DirtyMinute } from './dirty-repo.js';

export const MINUTE_MS = 60_000;

export interface DirtyTrackerOptions {
  /** How long a claimed minute stays invisible to other claimers before it is due again (crashed worker). */
  leaseMs: number;
  /**
   * Claim only these tenants' minutes (marks are never filtered): a catch-up or backfill of some
   * tenants that leaves everyone else's minutes to the rollup job (test/metrics/metrics.test.ts scopes its
   * rollups this way to its own tenants).
   */
  tenantIds?: readonly string[];
}

const DEFAULTS: DirtyTrackerOptions = { leaseMs: 120_000 };

const minuteOf = (ms: number): number => Math.floor(ms / MINUTE_MS) * MINUTE_MS;
/** A `traces.started_at` as written (`YYYY-MM-DD hh:mm:ss.fff`, UTC) or as ISO 8601 → epoch ms. */
const rowStartMs = (startedAt: string): number => Date.parse(startedAt.includes('T') ? startedAt : clickHouseToIso(startedAt));

/** Each (tenant, minute) once; throws on a time that is not a date (a bug upstream, never silently dropped). */
function distinctMinutes(minutes: readonly DirtyMinute[]): DirtyMinute[] {
  const distinct = new Map<string, DirtyMinute>();
  for (const m of minutes) {
    if (!Number.isFinite(m.minuteMs)) throw new RangeError('metrics dirty tracker: a trace start time is not a valid date');
    distinct.set(`${m.tenantId}|${m.minuteMs}`, m);
  }
  return [...distinct.values()];
}

/**
 * Dirty (tenant, minute) slices of the metrics rollup, one Postgres row each (so losing Redis loses
 * none), with the time it is next due and a generation that every mark bumps. A mark makes a minute
 * due now (never later than it already was); a claim leases due minutes by moving their due time to
 * the end of the lease; completion deletes only minutes whose generation is still the one claimed,
 * so a mark that arrives during a recomputation is never lost, and a crashed worker's minutes come
 * due again when the lease ends.
 */
export class MetricsDirtyTracker {
  private readonly repo: MetricsDirtyRepository;
  private readonly options: DirtyTrackerOptions;

  constructor(sql: Sql, options: Partial<DirtyTrackerOptions> = {}) {
    this.repo = metricsDirtyRepository(sql);
    this.options = { ...DEFAULTS, ...options };
  }

  /** Traces of `tenantId` starting at these times were written or rewritten: recompute their minutes. */
  async mark(tenantId: string, startedAtMs: readonly number[], now = Date.now()): Promise<void> {
    await this.repo.mark(distinctMinutes(startedAtMs.map((ms) => ({ tenantId, minuteMs: minuteOf(ms) }))), new Date(now));
  }

  /** The same for trace rows as written, of any tenants: one statement (called once per group commit). */
  async markRows(rows: readonly { tenant_id: string; started_at: string }[], now = Date.now()): Promise<void> {
    await this.repo.mark(minutesOfRows(rows), new Date(now));
  }

  /** The same inside the caller's transaction (an OTLP group commit marks its rows as it commits them). */
  async markRowsIn(tx: TxSql, rows: readonly { tenant_id: string; started_at: string }[], now = Date.now()): Promise<void> {
    await markDirtyMinutes(tx, minutesOfRows(rows), new Date(now));
  }

  /** Leases up to `max` due minutes, oldest due first; the caller recomputes them and then calls `complete`. */
  async claim(max: number, now = Date.now()): Promise<ClaimedMinute[]> {
    if (max <= 0 || this.options.tenantIds?.length === 0) return [];
    return this.repo.claim(max, new Date(now), new Date(now + this.options.leaseMs), this.options.tenantIds);
  }

  /** Forgets claimed minutes that were not marked again while they were being recomputed. */
  async complete(claimed: readonly ClaimedMinute[]): Promise<void> {
    await this.repo.complete(claimed);
  }
}

function minutesOfRows(rows: readonly { tenant_id: string; started_at: string }[]): DirtyMinute[] {
  return distinctMinutes(rows.map((r) => ({ tenantId: r.tenant_id, minuteMs: minuteOf(rowStartMs(r.started_at)) })));
}

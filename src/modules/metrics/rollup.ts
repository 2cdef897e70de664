import type { ClaimedMinute, MetricsDirtyTracker } from './dirty.js';
import type { MetricsRepository } from './repo.js';

/** Minutes recomputed per claim, and minutes per INSERT … SELECT (one tenant each). */
const CLAIM_SIZE = 1_000;
const MINUTES_PER_STATEMENT = 240;

export interface RollupRun {
  minutes: number;
  tenants: number;
}

/**
 * Keeps trace_metrics_1m in step with `traces`: claims dirty (tenant, minute) slices and
 * recomputes each from scratch. Safe to run twice or concurrently (every recomputation rewrites a
 * whole minute under a newer version); a slice whose recomputation fails stays leased and comes
 * due again when its lease ends.
 */
export class MetricsRollup {
  constructor(
    private readonly repo: MetricsRepository,
    private readonly dirty: MetricsDirtyTracker,
  ) {}

  /** Recomputes these minutes of one tenant now (also used by tests and backfills). */
  async recompute(tenantId: string, minutesMs: readonly number[]): Promise<void> {
    for (let i = 0; i < minutesMs.length; i += MINUTES_PER_STATEMENT) {
      await this.repo.recompute(tenantId, minutesMs.slice(i, i + MINUTES_PER_STATEMENT));
    }
  }

  /** One pass over the minutes that are due; throws after the pass when any tenant failed. */
  async processDue(now = Date.now()): Promise<RollupRun> {
    const claimed = await this.dirty.claim(CLAIM_SIZE, now);
    const byTenant = new Map<string, ClaimedMinute[]>();
    for (const c of claimed) byTenant.set(c.tenantId, [...(byTenant.get(c.tenantId) ?? []), c]);
    const errors: unknown[] = [];
    for (const [tenantId, minutes] of byTenant) {
      try {
        await this.recompute(tenantId, [...new Set(minutes.map((m) => m.minuteMs))]);
        await this.dirty.complete(minutes);
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, `metrics rollup failed for ${errors.length} of ${byTenant.size} tenants`);
    return { minutes: claimed.length, tenants: byTenant.size };
  }

  /** Passes until nothing is due (or `maxPasses`), for the repeatable job. */
  async drain(maxPasses = 10): Promise<RollupRun> {
    const total: RollupRun = { minutes: 0, tenants: 0 };
    for (let pass = 0; pass < maxPasses; pass += 1) {
      const run = await this.processDue();
      total.minutes += run.minutes;
      total.tenants += run.tenants;
      if (run.minutes < CLAIM_SIZE) break;
    }
    return total;
  }
}

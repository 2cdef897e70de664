import type { ExpiryLog, ProjectCutoff, TableExpiry } from '../../stores/clickhouse-expiry.js';
import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { metricsRetentionRepository, type MetricsRetentionRepository } from './retention-repo.js';

/**
 * Data retention of trace_metrics_1m: a project's minutes before its cutoff go, with the traces
 * they were computed from. Nothing brings them back: the rollup recomputes only minutes marked
 * dirty by a write, and a recomputation reads `traces FINAL`, which no longer holds the removed
 * traces (a minute whose traces are all gone is written as zero rows and a marker, never as the
 * old numbers). A recomputation that read the traces just before they were deleted and writes
 * after this delete can put a project's old minute back; the next sweep deletes it again.
 */
export class MetricsRetention {
  constructor(
    private readonly repo: MetricsRetentionRepository,
    private readonly log: ExpiryLog,
  ) {}

  async expire(cutoffs: readonly ProjectCutoff[]): Promise<TableExpiry[]> {
    return [await this.repo.rollup.expire(cutoffs, this.log)];
  }
}

/** The module's retention service over its own tables (the retention module's composition calls this). */
export const metricsRetention = (ch: ClickHouseStore, log: ExpiryLog): MetricsRetention => new MetricsRetention(metricsRetentionRepository(ch), log);

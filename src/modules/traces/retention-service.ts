import type { ExpiryLog, ProjectCutoff, TableExpiry } from '../../stores/clickhouse-expiry.js';
import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { traceRetentionRepository, type TraceRetentionRepository } from './retention-repo.js';

/**
 * Data retention of the trace store: removes the spans and trace rows of each project that started
 * before its cutoff (whole monthly partitions where every project in them is expired, lightweight
 * deletes otherwise; stores/clickhouse-expiry.ts). A span goes by its own start, a trace row by the
 * trace's: the later spans of a trace that straddles the cutoff follow at a later sweep.
 */
export class TraceRetention {
  constructor(
    private readonly repo: TraceRetentionRepository,
    private readonly log: ExpiryLog,
  ) {}

  /**
   * Trace rows first, the reverse of how ingest writes them (spans, then the trace row that makes
   * the trace stored): a sweep interrupted between the two never leaves a trace row without spans.
   */
  async expire(cutoffs: readonly ProjectCutoff[]): Promise<TableExpiry[]> {
    return [await this.repo.traces.expire(cutoffs, this.log), await this.repo.spans.expire(cutoffs, this.log)];
  }
}

/** The module's retention service over its own tables (the retention module's composition calls this). */
export const traceRetention = (ch: ClickHouseStore, log: ExpiryLog): TraceRetention => new TraceRetention(traceRetentionRepository(ch), log);

import type { ExpiryLog, ProjectCutoff, TableExpiry } from '../../stores/clickhouse-expiry.js';
import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { traceRetentionRepository, type TraceRetentionRepository } from './retention-repo.js';

/**
 * Data retention of the trace store: removes the spans, search tokens and trace rows of each project that started
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
   * Trace rows first, the reverse of how ingest writes them (spans, the trace's search tokens, then
   * the trace row that makes the trace stored): a sweep interrupted midway never leaves a trace row
   * without its spans or tokens. A token row goes by the start it was written at, which is the
   * trace's or, for rows an OTLP trace left behind when its start moved earlier, later than it.
   */
  async expire(cutoffs: readonly ProjectCutoff[]): Promise<TableExpiry[]> {
    const traces = await this.repo.traces.expire(cutoffs, this.log);
    const tokens = await this.repo.tokens.expire(cutoffs, this.log);
    return [traces, tokens, await this.repo.spans.expire(cutoffs, this.log)];
  }
}

/** The module's retention service over its own tables (the retention module's composition calls this). */
export const traceRetention = (ch: ClickHouseStore, log: ExpiryLog): TraceRetention => new TraceRetention(traceRetentionRepository(ch), log);

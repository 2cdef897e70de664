import type { ExpiryLog, ProjectCutoff, TableExpiry } from '../../stores/clickhouse-expiry.js';
import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { searchRetentionRepository, type SearchRetentionRepository } from './retention-repo.js';

/**
 * Data retention of span vectors: a project's vectors of spans that started before its cutoff, in
 * span_vectors and in the HNSW tables the indexer copies them to. Runs before the spans go (the
 * vectors are found through them). An HNSW load that copies a vector while this runs can put it
 * back in the HNSW table; the next sweep removes it.
 */
export class VectorRetention {
  constructor(
    private readonly repo: SearchRetentionRepository,
    private readonly log: ExpiryLog,
  ) {}

  /** HNSW tables first: the copies, then what they were copied from (which the indexer reads). */
  async expire(cutoffs: readonly ProjectCutoff[]): Promise<TableExpiry[]> {
    const done: TableExpiry[] = [];
    for (const table of await this.repo.hnsw()) done.push(await table.expire(cutoffs, this.log));
    done.push(await this.repo.vectors.expire(cutoffs, this.log));
    return done;
  }
}

/** The module's retention service over its own tables (the retention module's composition calls this). */
export const vectorRetention = (ch: ClickHouseStore, log: ExpiryLog): VectorRetention => new VectorRetention(searchRetentionRepository(ch), log);

import type { AppLogger } from '../../platform/log.js';
import type { SearchIndexRepository } from './index-repo.js';
import type { IndexStateRow, SearchStateRepository } from './state-repo.js';

export interface IndexerOptions {
  /** A project is moved to HNSW once it has this many vectors; below it an exact scan is about as fast. */
  minVectors: number;
  /** Vectors younger than this stay in the exact tail: their inserts may not have committed yet. */
  lagSeconds: number;
}

/** 20k vectors of 384 dimensions scan in about 10 ms on one core; the 60 s lag is six write time-outs. */
const DEFAULT_INDEXER_OPTIONS: IndexerOptions = { minVectors: 20_000, lagSeconds: 60 };

const EPOCH = new Date(0);

/**
 * The repeatable job that keeps big projects' vectors in HNSW tables. Each pass copies, per
 * project, the vectors stored since its watermark into span_vectors_hnsw_<dim> (the graph is built
 * by that INSERT, in the background, never by ingest), then moves the watermark. Searches read
 * the HNSW table up to the watermark and the exact tail after it, so a vector is searchable from
 * the moment it is stored. Idempotent: a pass that dies between the copy and the watermark copies
 * that window again, and searches take one row per span.
 */
export class HnswIndexer {
  private readonly ensured = new Set<number>();
  private supported: boolean | undefined;

  constructor(
    private readonly index: SearchIndexRepository,
    private readonly state: SearchStateRepository,
    private readonly log: AppLogger,
    private readonly options: IndexerOptions = DEFAULT_INDEXER_OPTIONS,
  ) {}

  async pass(): Promise<{ projects: number; vectors: number }> {
    if (!(await this.hnswAvailable())) return { projects: 0, vectors: 0 };
    let projects = 0;
    let vectors = 0;
    for (const p of await this.state.indexCandidates()) {
      // One project's failure is logged and retried next pass; the others go on.
      const loaded = await this.loadProject(p).catch((err: unknown) => {
        this.log.warn({ err, projectId: p.project_id }, 'hnsw load of a project failed; retried next pass');
        return 0;
      });
      projects += loaded > 0 ? 1 : 0;
      vectors += loaded;
    }
    return { projects, vectors };
  }

  /** Copies the project's vectors since its watermark, if it is (or now becomes) big enough; returns how many. */
  private async loadProject(p: IndexStateRow): Promise<number> {
    const after = p.loaded_until ?? EPOCH;
    const { count, upper } = await this.index.pending(p.tenant_id, p.project_id, p.dim, after, this.options.lagSeconds);
    if (count === 0 || (p.loaded_until === null && count < this.options.minVectors)) return 0;
    if (!this.ensured.has(p.dim)) {
      await this.index.ensureTable(p.dim);
      this.ensured.add(p.dim);
    }
    await this.index.load(p.tenant_id, p.project_id, p.dim, after, upper);
    await this.state.saveIndexState(p.tenant_id, p.project_id, p.dim, upper, count);
    return count;
  }

  private async hnswAvailable(): Promise<boolean> {
    if (this.supported === undefined) {
      this.supported = await this.index.supportsHnsw();
      if (!this.supported) this.log.warn({}, 'this ClickHouse has no vector similarity index (needs 25.8+): semantic search stays exact');
    }
    return this.supported;
  }
}

import { AppError } from '../../platform/errors.js';
import type { SearchStateRepository } from './state-repo.js';

/** Spans of one trace as far as their vectors go (an empty embedding is no vector). */
type TraceVectors = readonly { readonly embedding: readonly number[] }[];

// Dimensions never change once fixed, so a cached one is never stale; the bound only caps memory.
const CACHE_LIMIT = 10_000;

export const dimensionMismatch = (what: string, got: number, fixed: number) =>
  new AppError(
    400,
    'embedding.dimension_mismatch',
    `${what} has ${got} dimensions; this project's vectors have ${fixed} (fixed by its first vector)`,
    { expected_dimensions: fixed },
  );

/** The rule that a project's vector dimension is fixed by its first vector, for ingest, search and the embedder. */
export class VectorDimensions {
  private readonly cache = new Map<string, number>();

  constructor(private readonly state: SearchStateRepository) {}

  /** The project's dimension; null before its first vector. */
  async get(tenantId: string, projectId: string): Promise<number | null> {
    const cached = this.cache.get(`${tenantId}/${projectId}`);
    if (cached !== undefined) return cached;
    const dim = await this.state.dim(tenantId, projectId);
    if (dim !== null) this.remember(tenantId, projectId, dim);
    return dim;
  }

  /** Fixes the dimension to `dim` if the project has none yet; returns the project's dimension. */
  async claim(tenantId: string, projectId: string, dim: number): Promise<number> {
    const fixed = (await this.get(tenantId, projectId)) ?? (await this.state.claimDim(tenantId, projectId, dim));
    this.remember(tenantId, projectId, fixed);
    return fixed;
  }

  /**
   * Native ingest, before anything is reserved: for each trace, the 400 that refuses it, or null.
   * The first vector of the request fixes a project that has none yet. No store is read when no
   * span carries a vector.
   */
  async check(tenantId: string, projectId: string, traces: readonly TraceVectors[]): Promise<(AppError | null)[]> {
    const first = traces.flat().find((s) => s.embedding.length > 0);
    if (!first) return traces.map(() => null);
    const fixed = await this.claim(tenantId, projectId, first.embedding.length);
    return traces.map((spans) => {
      const i = spans.findIndex((s) => s.embedding.length > 0 && s.embedding.length !== fixed);
      return i < 0 ? null : dimensionMismatch(`spans.${i}.embedding`, spans[i]!.embedding.length, fixed);
    });
  }

  private remember(tenantId: string, projectId: string, dim: number): void {
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    this.cache.set(`${tenantId}/${projectId}`, dim);
  }
}

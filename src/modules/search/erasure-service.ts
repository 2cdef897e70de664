import type { VectorErasureRepository, VectorTraceRef } from './erasure-repo.js';

export type { VectorTraceRef } from './erasure-repo.js';

/** The search module's part of a data-subject erasure: the vectors of the subject's spans. */
export class VectorErasure {
  constructor(private readonly repo: VectorErasureRepository) {}

  countVectors(tenantId: string, refs: readonly VectorTraceRef[]): Promise<number> {
    return this.repo.count(tenantId, refs);
  }

  /** Idempotent. */
  eraseTraces(tenantId: string, refs: readonly VectorTraceRef[]): Promise<void> {
    return this.repo.erase(tenantId, refs);
  }

  remaining(tenantId: string, refs: readonly VectorTraceRef[]): Promise<number> {
    return this.repo.remaining(tenantId, refs);
  }

  purge(): Promise<void> {
    return this.repo.purge();
  }
}

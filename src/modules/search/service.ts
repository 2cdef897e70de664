import { AppError } from '../../platform/errors.js';
import { toIso } from '../../platform/schemas.js';
import { clickHouseToIso } from '../../platform/time.js';
import { ProviderError } from '../../providers/types.js';
import type { LlmConnectionService } from '../llm-connections/service.js';
import type { ProjectService } from '../projects/service.js';
import { dimensionMismatch, type VectorDimensions } from './dimensions-service.js';
import type { SearchRepository, VectorHit } from './repo.js';
import type { SearchBody, SearchQuery, SearchSettings, SpanSearchResult } from './schemas.js';
import type { SearchStateRepository } from './state-repo.js';

// The module's secondary services and helpers that other modules use: this file is its public face.
export type { VectorDimensions } from './dimensions-service.js';
export type { VectorErasure } from './erasure-service.js';
export { vectorRetention } from './retention-service.js';

const noEmbedder = () =>
  new AppError(
    400,
    'search.no_embedder',
    'no embedding provider is configured for this tenant: add an openai LLM connection (POST /v1/llm-connections), or search by query_vector with POST /v1/search/spans',
  );

/** Nearest first, one result per span (its best similarity), at least `threshold`, at most `limit`. */
export function rankHits(hits: readonly VectorHit[], limit: number, threshold: number): SpanSearchResult[] {
  const best = new Map<string, VectorHit>();
  for (const hit of hits) {
    // NaN (a vector without direction) fails every threshold.
    if (!(hit.similarity >= threshold)) continue;
    const seen = best.get(hit.span_id);
    if (!seen || hit.similarity > seen.similarity) best.set(hit.span_id, hit);
  }
  return [...best.values()]
    .sort((a, b) => b.similarity - a.similarity || (a.span_id < b.span_id ? -1 : 1))
    .slice(0, limit)
    .map((h) => ({
      span_id: h.span_id,
      trace_id: h.trace_id,
      similarity: h.similarity,
      span_name: h.span_name,
      span_type: h.span_type,
      created_at: clickHouseToIso(h.created_at),
    }));
}

/** Semantic span search: by vector, by text (through the tenant's embedder), and its per-project settings. */
export class SearchService {
  constructor(
    private readonly repo: SearchRepository,
    private readonly state: SearchStateRepository,
    private readonly dimensions: VectorDimensions,
    private readonly projects: ProjectService,
    private readonly llm: Pick<LlmConnectionService, 'resolveEmbedder'>,
  ) {}

  async byVector(tenantId: string, input: SearchBody): Promise<{ results: SpanSearchResult[] }> {
    await this.projects.get(tenantId, input.project_id);
    return this.nearest(tenantId, input.project_id, input.query_vector, input, 'query_vector');
  }

  async byText(tenantId: string, input: SearchQuery): Promise<{ results: SpanSearchResult[] }> {
    await this.projects.get(tenantId, input.project_id);
    const embedder = await this.llm.resolveEmbedder(tenantId);
    if (!embedder) throw noEmbedder();
    let vector: number[];
    try {
      [vector = []] = (await embedder.provider.embed(embedder.model, [input.q])).vectors;
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      throw new AppError(502, 'search.embedder_failed', `the embedding provider failed: ${err.message}`);
    }
    return this.nearest(tenantId, input.project_id, vector, input, `the ${embedder.model} embedding of q`);
  }

  async settings(tenantId: string, projectId: string): Promise<SearchSettings> {
    await this.projects.get(tenantId, projectId);
    return this.describe(tenantId, projectId);
  }

  /** Opting in needs an embedder now: a setting that could never act would only hide the problem. */
  async putSettings(tenantId: string, projectId: string, embedSpans: boolean): Promise<SearchSettings> {
    await this.projects.get(tenantId, projectId);
    if (embedSpans && !(await this.llm.resolveEmbedder(tenantId))) throw noEmbedder();
    await this.state.putSettings(tenantId, projectId, embedSpans);
    return this.describe(tenantId, projectId);
  }

  /** `what` names the query's vector in a dimension mismatch. */
  private async nearest(
    tenantId: string,
    projectId: string,
    vector: readonly number[],
    { limit, threshold }: { limit: number; threshold: number },
    what: string,
  ): Promise<{ results: SpanSearchResult[] }> {
    const dim = await this.dimensions.get(tenantId, projectId);
    if (dim === null) return { results: [] };
    if (dim !== vector.length) throw dimensionMismatch(what, vector.length, dim);
    const index = await this.state.indexState(tenantId, projectId);
    const hits = index?.loaded_until
      ? await this.repo.indexed(tenantId, projectId, dim, vector, limit, index.loaded_until)
      : await this.repo.exact(tenantId, projectId, dim, vector, limit);
    return { results: rankHits(hits, limit, threshold) };
  }

  private async describe(tenantId: string, projectId: string): Promise<SearchSettings> {
    const [row, dimensions] = await Promise.all([this.state.settings(tenantId, projectId), this.dimensions.get(tenantId, projectId)]);
    return {
      project_id: projectId,
      embed_spans: row?.embed_spans ?? false,
      dimensions,
      embedded_until: toIso(row?.embedded_until ?? null),
      last_error: row?.last_error ?? null,
    };
  }
}

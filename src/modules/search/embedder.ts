import { ProviderError } from '../../providers/types.js';
import type { AppLogger } from '../../platform/log.js';
import type { LlmConnectionService } from '../llm-connections/service.js';
import type { VectorDimensions } from './dimensions-service.js';
import { dimensionMismatch } from './dimensions-service.js';
import type { SearchRepository, SpanText } from './repo.js';
import type { SearchSettingsRow, SearchStateRepository } from './state-repo.js';

export interface EmbedderOptions {
  /** Spans read per project and pass. */
  spansPerPass: number;
  /** Texts per provider call. */
  batch: number;
  /** Characters of input and of output embedded per span. */
  maxChars: number;
  /**
   * How far behind its cursor a pass looks again: a span whose insert committed late (up to a
   * write time-out after its created_at) is still found, and the spans already embedded there are
   * skipped by id.
   */
  overlapMs: number;
}

const DEFAULT_EMBEDDER_OPTIONS: EmbedderOptions = { spansPerPass: 512, batch: 64, maxChars: 4_000, overlapMs: 120_000 };

type Embedder = NonNullable<Awaited<ReturnType<LlmConnectionService['resolveEmbedder']>>>;

const NO_EMBEDDER = 'no embedding provider: add an openai LLM connection (POST /v1/llm-connections) or set OPENAI_API_KEY';

/** What a span is embedded as: its input and output, the text a search by meaning looks for. */
const spanText = (span: Pick<SpanText, 'input' | 'output'>): string => [span.input, span.output].filter(Boolean).join('\n');

const clickHouseToDate = (value: string): Date => new Date(`${value.replace(' ', 'T')}Z`);

/**
 * The repeatable job that embeds, for projects that opted in, the spans that came without a
 * vector: their text goes to the tenant's embedder in batches and the vectors to span_vectors.
 * Never on a request. Idempotent: spans that already have a vector are skipped by id, so a pass
 * run twice embeds nothing twice (two overlapping passes might; searches take one row per span).
 */
export class SpanEmbedder {
  constructor(
    private readonly repo: SearchRepository,
    private readonly state: SearchStateRepository,
    private readonly dimensions: VectorDimensions,
    private readonly llm: Pick<LlmConnectionService, 'resolveEmbedder'>,
    private readonly log: AppLogger,
    private readonly options: EmbedderOptions = DEFAULT_EMBEDDER_OPTIONS,
  ) {}

  async drain(): Promise<{ projects: number; embedded: number }> {
    const targets = await this.state.embeddingTargets();
    let embedded = 0;
    for (const target of targets) {
      // One project's failure (a store error) is logged and retried next pass; the others go on.
      embedded += await this.embedProject(target).catch((err: unknown) => {
        this.log.warn({ err, projectId: target.project_id }, 'embedding pass of a project failed; retried next pass');
        return 0;
      });
    }
    return { projects: targets.length, embedded };
  }

  /** Embeds one project's pending spans; a provider failure stops this project until the next pass. */
  private async embedProject(target: SearchSettingsRow): Promise<number> {
    const { tenant_id: tenantId, project_id: projectId } = target;
    const embedder = await this.llm.resolveEmbedder(tenantId);
    if (!embedder) {
      await this.state.recordEmbedding(projectId, null, NO_EMBEDDER);
      return 0;
    }
    // Set whenever embed_spans is (state-repo putSettings).
    const since = new Date(target.embedded_until!.getTime() - this.options.overlapMs);
    const spans = await this.repo.unembeddedSpans(tenantId, projectId, since, this.options.spansPerPass, this.options.maxChars);
    const row = (s: SpanText) => ({
      tenant_id: tenantId,
      project_id: projectId,
      span_id: s.span_id,
      trace_id: s.trace_id,
      span_name: s.name,
      span_type: s.type,
      created_at: s.created_at,
    });
    let embedded = 0;
    for (let start = 0; start < spans.length; start += this.options.batch) {
      const chunk = spans.slice(start, start + this.options.batch);
      let vectors: (number[] | null)[];
      try {
        vectors = await this.embedTexts(embedder, chunk);
      } catch (err) {
        if (!(err instanceof ProviderError)) throw err;
        await this.state.recordEmbedding(projectId, null, err.message);
        return embedded;
      }
      const dim = vectors.find((v) => v !== null)?.length;
      if (dim !== undefined) {
        const fixed = await this.dimensions.claim(tenantId, projectId, dim);
        if (fixed !== dim) {
          await this.state.recordEmbedding(projectId, null, dimensionMismatch(`the ${embedder.model} embedding`, dim, fixed).message);
          return embedded;
        }
      }
      const stored = chunk.flatMap((s, i) => (vectors[i] ? [{ ...row(s), vector: vectors[i] }] : []));
      const refused = chunk.filter((_, i) => !vectors[i]).map(row);
      await this.repo.insert(stored);
      await this.repo.insertRefused(refused);
      const refusal = refused.length > 0 ? `the provider refused the text of ${refused.length} span(s), which stay without a vector` : null;
      await this.state.recordEmbedding(projectId, clickHouseToDate(chunk.at(-1)!.created_at), refusal);
      embedded += stored.length;
    }
    return embedded;
  }

  /**
   * The vectors of the spans' texts, null for a text the provider refuses (`bad_request`: it
   * would be refused forever). A batch refused as a whole is tried again span by span.
   */
  private async embedTexts(embedder: Embedder, spans: readonly SpanText[]): Promise<(number[] | null)[]> {
    try {
      return (await embedder.provider.embed(embedder.model, spans.map(spanText))).vectors;
    } catch (err) {
      if (!(err instanceof ProviderError) || err.failure !== 'bad_request') throw err;
      if (spans.length === 1) return [null];
      const one: (number[] | null)[] = [];
      for (const span of spans) one.push(...(await this.embedTexts(embedder, [span])));
      return one;
    }
  }
}

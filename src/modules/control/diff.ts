import { BUILTIN_EMBEDDING_MODEL, builtinEmbedding, cosineSimilarity } from '../../providers/builtin-embedding.js';
import type { LlmProvider } from '../../providers/types.js';
import type { Evaluation } from '../evals/schemas.js';
import type { Span } from '../traces/schemas.js';
import type { ActionRow } from './actions-repo.js';
import type { RemediationDiff } from './schemas.js';

export interface EmbedderSource {
  resolveEmbedder(tenantId: string): Promise<{ provider: LlmProvider; model: string } | null>;
}

/**
 * Similarity of the original and remediated outputs with the tenant's embedder; the builtin
 * embedding when it has none or its provider fails (a diff should not fail for want of vectors).
 */
export async function outputSimilarity(embedders: EmbedderSource, tenantId: string, a: string, b: string): Promise<{ similarity: number; model: string }> {
  const embedder = await embedders.resolveEmbedder(tenantId);
  if (embedder) {
    try {
      const { vectors, model } = await embedder.provider.embed(embedder.model, [a, b]);
      if (vectors[0] && vectors[1]) return { similarity: cosineSimilarity(vectors[0], vectors[1]), model };
    } catch {
      // fall through to the builtin embedding
    }
  }
  return { similarity: cosineSimilarity(builtinEmbedding(a), builtinEmbedding(b)), model: BUILTIN_EMBEDDING_MODEL };
}

/** The diff of a remediation against the span it re-ran, with each re-score beside its original. */
export function remediationDiff(
  action: ActionRow,
  span: Pick<Span, 'completion_tokens' | 'latency_ms'>,
  rescores: readonly { rescore: Evaluation; original: Evaluation | null }[],
  similarity: { similarity: number; model: string },
): RemediationDiff {
  return {
    token_length_delta: (action.completion_tokens ?? 0) - span.completion_tokens,
    latency_delta_ms: (action.latency_ms ?? 0) - span.latency_ms,
    embedding_similarity: similarity.similarity,
    embedding_model: similarity.model,
    eval_deltas: rescores.map(({ rescore, original }) => {
      const before = original?.score ?? null;
      return {
        rule_id: rescore.rule_id,
        metric_name: rescore.metric_name,
        original_score: before,
        remediated_score: rescore.score,
        delta: before === null || rescore.score === null ? null : rescore.score - before,
      };
    }),
  };
}

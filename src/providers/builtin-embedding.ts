import { createHash } from 'node:crypto';

export const BUILTIN_EMBEDDING_MODEL = 'builtin-hashed-bow-256';
const DIMENSIONS = 256;

/**
 * A deterministic embedding for when a tenant has no embedding provider: a hashed bag of words
 * (lowercased word tokens, each adding a signed 1 at a hashed position), L2-normalized. It knows
 * no meaning, only shared words, which is enough to tell "nearly the same answer" from "another".
 */
export function builtinEmbedding(text: string): number[] {
  const vector = new Array<number>(DIMENSIONS).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const digest = createHash('sha256').update(word).digest();
    vector[digest.readUInt16BE(0) % DIMENSIONS]! += digest[2]! & 1 ? 1 : -1;
  }
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector : vector.map((v) => v / norm);
}

/** Cosine similarity; 0 when either vector is all zeros (an empty text is like nothing). */
export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

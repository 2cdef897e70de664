/**
 * Reproducible vectors for the search bench and tests. Uniform random vectors in many dimensions
 * are nearly equidistant from any query, so "the 10 nearest" means little and any index looks
 * bad (or good) by accident; embeddings of real text are clustered and locally low-dimensional.
 * These are too: points around random cluster centres, spread mostly within a small subspace of
 * their cluster, plus a little noise in every dimension.
 */
import { seededRandom } from './random.js';

/** Standard normal (Box–Muller). */
export function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

export interface ClusterShape {
  clusters: number;
  /** Dimensions of each cluster's own subspace. */
  subspace: number;
  /** Spread within the subspace, relative to the centres' scale (1 per component). */
  spread: number;
  /** Uniform noise in every dimension, same scale. */
  noise: number;
}

export const DEFAULT_SHAPE: ClusterShape = { clusters: 1_000, subspace: 8, spread: 0.6, noise: 0.15 };

/**
 * A stream of vectors drawn from one fixed mixture: `shapeSeed` fixes the clusters, `drawSeed` the
 * draws, so the data set and the queries can come from the same clusters but never coincide.
 */
export function clusteredVectors(shapeSeed: number, drawSeed: number, dim: number, shape: ClusterShape = DEFAULT_SHAPE): () => number[] {
  const layout = seededRandom(shapeSeed);
  const centres = Array.from({ length: shape.clusters }, () => Float32Array.from({ length: dim }, () => gaussian(layout)));
  const bases = Array.from({ length: shape.clusters }, () =>
    Array.from({ length: shape.subspace }, () => Float32Array.from({ length: dim }, () => gaussian(layout) / Math.sqrt(shape.subspace))),
  );
  const draw = seededRandom(drawSeed);
  const noise = shape.noise * Math.sqrt(12); // uniform of that standard deviation: cheaper than a normal per component
  return () => {
    const k = Math.floor(draw() * shape.clusters);
    const v = Array.from(centres[k]!);
    for (const axis of bases[k]!) {
      const z = gaussian(draw) * shape.spread;
      for (let i = 0; i < dim; i++) v[i]! += z * axis[i]!;
    }
    for (let i = 0; i < dim; i++) v[i]! += (draw() - 0.5) * noise;
    return v;
  };
}

export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}

/** Nearest-rank percentile of a sample (p in 0..100). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function summary(values: readonly number[]) {
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    n: values.length,
    p50_ms: round(percentile(values, 50)),
    p99_ms: round(percentile(values, 99)),
    max_ms: round(Math.max(...values)),
  };
}

export const ratio = (a: number, b: number): number => Math.round((a / b) * 1000) / 1000;

/** Milliseconds elapsed while `work` runs. */
export async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = process.hrtime.bigint();
  const value = await work();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value };
}

/** n, mean, p50/p95/p99 and max of a sample (NaN entries skipped), rounded to 0.01. */
export function distribution(values: ArrayLike<number>) {
  const sorted = Array.from(values)
    .filter((v) => !Number.isNaN(v))
    .sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 100) / 100;
  const at = (p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!);
  return {
    n: sorted.length,
    mean_ms: round(sorted.reduce((s, v) => s + v, 0) / (sorted.length || 1)),
    p50_ms: round(at(50)),
    p95_ms: round(at(95)),
    p99_ms: round(at(99)),
    max_ms: round(sorted.length === 0 ? NaN : sorted[sorted.length - 1]!),
  };
}

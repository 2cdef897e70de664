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

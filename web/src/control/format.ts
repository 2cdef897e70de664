/** Scores and their deltas as the API gives them (null: not measured). */
export const formatScore = (n: number | null): string => (n === null ? '—' : n.toFixed(2));
export const formatDelta = (n: number | null): string => (n === null ? '—' : `${n > 0 ? '+' : n < 0 ? '−' : '±'}${Math.abs(n).toFixed(2)}`);
export const formatRate = (n: number | null): string => (n === null ? '—' : `${Math.round(n * 1000) / 10}%`);
export const deltaClass = (n: number | null): string => (n === null || n === 0 ? 'delta' : n > 0 ? 'delta delta-up' : 'delta delta-down');

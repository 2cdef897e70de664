import type { ProjectWindow } from '../metrics/service.js';

/**
 * Anomaly statistics, pure: a 5-minute window of one project against the windows before it.
 *
 * Method: robust z-score, z = 0.6745 · (x − median) / MAD over the trailing baseline (Iglewicz and
 * Hoaglin's modified z-score; 0.6745 makes it comparable to a normal z). Median and MAD ignore the
 * very outliers we look for, so a past incident in the baseline does not mask the next one, and
 * they need no distribution assumption (latency and cost are skewed). A 3-hour trailing baseline
 * follows the daily cycle closely enough that a morning ramp does not alarm, without needing weeks
 * of history that a seasonal model would.
 */

export const ANOMALY_METRICS = ['latency_p95', 'error_rate', 'cost', 'tokens'] as const;
export type AnomalyMetric = (typeof ANOMALY_METRICS)[number];
export const SEVERITIES = ['warning', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];

export const WINDOW_MS = 5 * 60_000;

/** One project's traffic in one window, summed from the per-minute rollup (MetricsService.projectWindows). */
export type WindowStats = Omit<ProjectWindow, 'projectId'>;

export interface DetectorSettings {
  /** Traces a window needs to be judged, or to count in a baseline: quiet projects do not alarm. */
  minTraces: number;
  /** Baseline windows (each with minTraces) needed before any judgement. */
  minBaselineWindows: number;
  /** How many windows before the observed one form its baseline. */
  baselineWindows: number;
  warningScore: number;
  criticalScore: number;
  /** The MAD is at least this share of the median, so a flat baseline does not divide by ~0. */
  relativeMadFloor: number;
}

export const DEFAULT_SETTINGS: DetectorSettings = {
  minTraces: 20,
  minBaselineWindows: 12,
  baselineWindows: 36,
  warningScore: 3.5,
  criticalScore: 6,
  relativeMadFloor: 0.1,
};

/** The MAD's absolute floor per metric, in the metric's unit: below it a change is noise. */
const ABSOLUTE_MAD_FLOOR: Record<AnomalyMetric, number> = { latency_p95: 1, error_rate: 0.02, cost: 0.000_001, tokens: 1 };

const VALUE: Record<AnomalyMetric, (w: WindowStats) => number | null> = {
  latency_p95: (w) => w.latencyP95,
  error_rate: (w) => (w.traces > 0 ? w.errors / w.traces : null),
  cost: (w) => w.cost,
  tokens: (w) => w.tokens,
};

export interface Finding {
  metric: AnomalyMetric;
  observed: number;
  expected: number;
  score: number;
  severity: Severity;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The robust z-score of `value` against `baseline`, with the MAD floored. */
export function robustScore(value: number, baseline: readonly number[], absoluteFloor: number, relativeFloor: number) {
  const expected = median(baseline);
  const mad = median(baseline.map((v) => Math.abs(v - expected)));
  const scale = Math.max(mad, relativeFloor * Math.abs(expected), absoluteFloor);
  return { expected, score: (0.6745 * (value - expected)) / scale };
}

/**
 * Findings for `observed` against the eligible windows of `history` in its baseline span. Only
 * rises count: a slower, more failing, costlier or hungrier window is the news; a drop is not a
 * failure. Fewer than minTraces in the window, or too few eligible baseline windows: no finding.
 */
export function detectAnomalies(observed: WindowStats, history: readonly WindowStats[], settings: DetectorSettings = DEFAULT_SETTINGS): Finding[] {
  if (observed.traces < settings.minTraces) return [];
  const since = observed.startMs - settings.baselineWindows * WINDOW_MS;
  const baseline = history.filter((w) => w.startMs >= since && w.startMs < observed.startMs && w.traces >= settings.minTraces);
  if (baseline.length < settings.minBaselineWindows) return [];
  const findings: Finding[] = [];
  for (const metric of ANOMALY_METRICS) {
    const value = VALUE[metric](observed);
    const values = baseline.map(VALUE[metric]).filter((v): v is number => v !== null);
    if (value === null || values.length < settings.minBaselineWindows) continue;
    const { expected, score } = robustScore(value, values, ABSOLUTE_MAD_FLOOR[metric], settings.relativeMadFloor);
    if (score < settings.warningScore) continue;
    findings.push({ metric, observed: value, expected, score, severity: score >= settings.criticalScore ? 'critical' : 'warning' });
  }
  return findings;
}

import type { Evaluation } from '../evals/schemas.js';
import type { EvalService } from '../evals/service.js';
import type { TraceService } from '../traces/service.js';
import type { DeploymentRepository, DeploymentRow } from './deployments-repo.js';

export interface MonitorSettings {
  /** Newest scored evaluations the rolling metric looks at. */
  window: number;
  /** Scored evaluations of the shipped version needed before a regression can be called. */
  minSamples: number;
  /** How far below the baseline the live pass rate may fall before the deployment has regressed. */
  margin: number;
  /** How far back before shipping the baseline reads the project's evaluations. */
  baselineLookbackMs: number;
}

export const DEFAULT_MONITOR_SETTINGS: MonitorSettings = { window: 200, minSamples: 5, margin: 0.1, baselineLookbackMs: 24 * 3_600_000 };

const passRate = (evals: readonly Evaluation[]): number | null =>
  evals.length === 0 ? null : evals.filter((e) => e.passed === true).length / evals.length;

/** Whether a trace ran `version` of the prompt: one of its spans says so in metadata (docs/control-loop.md). */
export const runsVersion = (spans: readonly { metadata: Record<string, unknown> }[], promptName: string, version: number): boolean =>
  spans.some((s) => s.metadata.prompt_name === promptName && String(s.metadata.prompt_version) === String(version));

/**
 * Watches a shipped prompt version in live traffic: the pass rate of the project's eval-rule
 * evaluations of traces that ran it (the deployment's regression_metric), against the pass rate
 * the project had before it shipped (monitor_baseline).
 */
export class DeploymentMonitor {
  constructor(
    private readonly repo: DeploymentRepository,
    private readonly evals: Pick<EvalService, 'list'>,
    private readonly traces: Pick<TraceService, 'get'>,
    readonly settings: MonitorSettings = DEFAULT_MONITOR_SETTINGS,
  ) {}

  /** The project's pass rate before shipping; without evaluations then, the A/B test's for the current prompt. */
  async baseline(d: DeploymentRow): Promise<number | null> {
    const shipped = d.shipped_at ?? new Date();
    const before = await this.scored(d, new Date(shipped.getTime() - this.settings.baselineLookbackMs), shipped);
    const rate = passRate(before);
    if (rate !== null) return rate;
    const failures = d.ab_report?.failure_rate_before;
    return failures === null || failures === undefined ? null : 1 - failures;
  }

  /** The live pass rate of the shipped version and how many evaluations it rests on. */
  async measure(d: DeploymentRow): Promise<{ metric: number | null; samples: number }> {
    const evals = await this.scored(d, d.shipped_at ?? d.updated_at, new Date());
    const traceIds = [...new Set(evals.map((e) => e.trace_id))];
    const known = await this.repo.seenTraces(d.id, traceIds);
    const fresh = await Promise.all(
      traceIds
        .filter((id) => !known.has(id))
        .map(async (id) => {
          const trace = await this.traces.get(d.tenant_id, id).catch(() => null);
          return { trace_id: id, runs_version: trace !== null && d.to_version !== null && runsVersion(trace.spans, d.prompt_name, d.to_version) };
        }),
    );
    await this.repo.rememberTraces(d.id, fresh);
    for (const f of fresh) known.set(f.trace_id, f.runs_version);
    const live = evals.filter((e) => known.get(e.trace_id) === true);
    return { metric: passRate(live), samples: live.length };
  }

  regressed(d: DeploymentRow, measured: { metric: number | null; samples: number }): boolean {
    if (measured.metric === null || d.monitor_baseline === null || measured.samples < this.settings.minSamples) return false;
    return measured.metric < d.monitor_baseline - this.settings.margin;
  }

  /** Completed fresh evaluations by the project's eval rules, created in [from, to], newest first. */
  private async scored(d: DeploymentRow, from: Date, to: Date): Promise<Evaluation[]> {
    const page = await this.evals.list(d.tenant_id, {
      project_id: d.project_id,
      status: 'completed',
      context: 'fresh',
      from: from.toISOString(),
      to: to.toISOString(),
      limit: this.settings.window,
    });
    return page.evals.filter((e) => e.rule_id !== null && e.passed !== null);
  }
}

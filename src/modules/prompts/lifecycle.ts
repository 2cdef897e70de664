import { planAtLeast } from '../../platform/plans.js';
import { ProviderError } from '../../providers/types.js';
import type { FailureCluster } from '../failures/schemas.js';
import type { FailureService } from '../failures/service.js';
import type { AppLogger } from '../../platform/log.js';
import type { ProjectService } from '../projects/service.js';
import type { TenantService } from '../tenants/service.js';
import type { TraceService } from '../traces/service.js';
import type { AbHarness } from './ab-harness.js';
import { findCluster, type DeploymentQueue, type PromptDeploymentService } from './deployment-service.js';
import { SYSTEM_ACTORS } from './deployments.js';
import type { DeploymentRepository, DeploymentRow } from './deployments-repo.js';
import type { DeploymentMonitor } from './monitor.js';
import { exampleOf, type Example, type PromptProposer } from './proposer.js';
import type { PromptRepository } from './repo.js';
import type { AbReport } from './schemas.js';

export interface LifecycleSettings {
  /** A cluster recurs once it holds this many traces and was seen within `recurringWindowMs`. */
  recurringMinTraces: number;
  recurringWindowMs: number;
  /** No automatic proposal for a cluster that had a deployment created this recently. */
  proposalCooldownMs: number;
  /** Passing traces replayed beside the cluster's failing examples (at most five: example_trace_ids). */
  passingSample: number;
  /** How long one A/B run may hold a deployment before another worker takes it over. */
  abLeaseMs: number;
  /** A proposal still waiting this long has lost its job: the pass queues it again. */
  requeueAfterMs: number;
}

export const DEFAULT_LIFECYCLE_SETTINGS: LifecycleSettings = {
  recurringMinTraces: 5,
  recurringWindowMs: 24 * 3_600_000,
  proposalCooldownMs: 24 * 3_600_000,
  passingSample: 5,
  abLeaseMs: 10 * 60_000,
  requeueAfterMs: 60_000,
};

const BATCH = 100;
// Failures a retry cannot fix: the A/B test fails at once instead of after every attempt.
const FINAL_FAILURES = new Set(['auth', 'bad_request', 'blocked_url']);
const SYSTEM = (id: string) => ({ id, system: true });
const LIFECYCLE = SYSTEM(SYSTEM_ACTORS.lifecycle);

/**
 * Every automatic move of a prompt deployment, in the worker: the `prompts` job writes a
 * proposal and runs its A/B test (`run`); the repeatable `prompts-lifecycle` pass proposes for
 * recurring clusters, ships, starts and keeps monitoring, and rolls back regressions (`pass`).
 * Each step re-reads the state and moves conditionally, so running one twice changes nothing.
 */
export class PromptLifecycle {
  constructor(
    private readonly repo: DeploymentRepository,
    private readonly prompts: PromptRepository,
    private readonly deployments: PromptDeploymentService,
    private readonly proposer: PromptProposer,
    private readonly harness: AbHarness,
    private readonly monitor: DeploymentMonitor,
    private readonly deps: {
      failures: Pick<FailureService, 'listClusters'>;
      traces: Pick<TraceService, 'get' | 'list'>;
      projects: Pick<ProjectService, 'get'>;
      tenants: Pick<TenantService, 'get'>;
      queue: DeploymentQueue;
      log: AppLogger;
    },
    readonly settings: LifecycleSettings = DEFAULT_LIFECYCLE_SETTINGS,
  ) {}

  /** The `prompts` job: proposed → ab_running → ab_passed | ab_failed. */
  async run(tenantId: string, id: string, lastAttempt: boolean): Promise<string> {
    let d = await this.repo.find(tenantId, id);
    if (!d) return 'gone';
    const lease = new Date(Date.now() + this.settings.abLeaseMs);
    if (d.status === 'ab_running' && !(await this.repo.renewLease(tenantId, id, lease))) return 'held';
    if (d.status !== 'proposed' && d.status !== 'ab_running') return 'done';
    try {
      const cluster = await findCluster(this.deps.failures, tenantId, d.project_id, d.cluster_signature);
      const failing = cluster ? await this.examples(d, cluster.example_trace_ids) : [];
      if (d.status === 'proposed') {
        // Written before the move, so the A/B run (and a reader of ab_running) sees the candidate.
        const missing = d.proposed_prompt === '' ? await this.writeProposal(d, cluster, failing) : null;
        d = await this.deployments.apply(d, 'start_ab', LIFECYCLE, { lease_until: lease });
        if (!d) return 'moved';
        if (missing) return this.finish(d, unusable(missing));
      }
      const passing = await this.passing(d, new Set(failing.map((e) => e.traceId)));
      return this.finish(d, await this.harness.run(tenantId, d.project_id, { current: d.current_prompt, proposed: d.proposed_prompt }, failing, passing));
    } catch (err) {
      if (!(err instanceof ProviderError) || !(lastAttempt || FINAL_FAILURES.has(err.failure))) {
        // The job's retry must find the run free, not wait out the lease this run took.
        await this.repo.releaseLease(tenantId, id).catch(() => {});
        throw err;
      }
      let now = await this.repo.find(tenantId, id);
      if (now?.status === 'proposed') now = await this.deployments.apply(now, 'start_ab', LIFECYCLE);
      return now?.status === 'ab_running' ? this.finish(now, unusable(`provider failed: ${err.failure}: ${err.message}`)) : 'moved';
    }
  }

  /** One pass of the `prompts-lifecycle` job; a deployment whose step fails is logged and tried again next pass. */
  async pass(): Promise<Record<string, number>> {
    const requeueBefore = new Date(Date.now() - this.settings.requeueAfterMs);
    const lost = [...(await this.repo.inStatus('proposed', BATCH, requeueBefore)), ...(await this.repo.expiredLeases(BATCH, requeueBefore))];
    return {
      proposed: await this.proposeForRecurringClusters(),
      requeued: await this.each('requeue', lost, async (d) => {
        await this.repo.touch(d.tenant_id, d.id);
        await this.deps.queue(d.tenant_id, d.id);
        return true;
      }),
      shipped: await this.each('autoship', await this.repo.inStatus('ab_passed', BATCH), async (d) => {
        if (!(await this.deps.projects.get(d.tenant_id, d.project_id)).prompt_autoship_enabled) return false;
        return Boolean(await this.deployments.apply(d, 'autoship', SYSTEM(SYSTEM_ACTORS.autoship), { approved_by: SYSTEM_ACTORS.autoship }));
      }),
      monitoring: await this.each('start_monitoring', await this.repo.inStatus('shipped', BATCH), async (d) =>
        Boolean(await this.deployments.apply(d, 'start_monitoring', LIFECYCLE, { monitor_baseline: await this.monitor.baseline(d) })),
      ),
      regressed: await this.each('monitor', await this.repo.inStatus('monitoring', BATCH), async (d) => {
        const measured = await this.monitor.measure(d);
        await this.repo.setMonitoring(d.tenant_id, d.id, measured.metric, measured.samples);
        if (!this.monitor.regressed(d, measured)) return false;
        return Boolean(await this.deployments.apply(d, 'regress', LIFECYCLE, { regression_metric: measured.metric, monitor_samples: measured.samples }));
      }),
      rolled_back: await this.each('auto_rollback', await this.repo.inStatus('regressed', BATCH), async (d) =>
        Boolean(await this.deployments.apply(d, 'auto_rollback', SYSTEM(SYSTEM_ACTORS.autoRollback), { approved_by: SYSTEM_ACTORS.autoRollback })),
      ),
    };
  }

  private async each(step: string, rows: readonly DeploymentRow[], work: (d: DeploymentRow) => Promise<boolean>): Promise<number> {
    let done = 0;
    for (const d of rows) {
      try {
        if (await work(d)) done++;
      } catch (err) {
        this.deps.log.warn({ err, deployment: d.id, step }, 'prompt lifecycle step failed; the next pass tries again');
      }
    }
    return done;
  }

  /** Has the provider write the proposal; answers why there is none, or null once it is stored. */
  private async writeProposal(d: DeploymentRow, cluster: FailureCluster | undefined, failing: readonly Example[]): Promise<string | null> {
    if (!cluster) return 'the failure cluster no longer exists';
    const proposal = await this.proposer.propose(d.tenant_id, d.current_prompt, cluster, failing);
    if (!proposal) return 'the provider answered no usable proposal twice';
    await this.repo.writeProposal(d.tenant_id, d.id, proposal);
    return null;
  }

  private finish(d: DeploymentRow, report: AbReport): Promise<string> {
    return this.deployments.apply(d, report.decision === 'pass' ? 'ab_pass' : 'ab_fail', LIFECYCLE, { ab_report: report, lease_until: null }).then((moved) => moved?.status ?? 'moved');
  }

  /** Team plan and above: a cluster that keeps recurring gets a proposal for the prompt its spans name. */
  private async proposeForRecurringClusters(): Promise<number> {
    let proposed = 0;
    const since = new Date(Date.now() - this.settings.recurringWindowMs);
    const cooldown = new Date(Date.now() - this.settings.proposalCooldownMs);
    for (const { tenant_id: tenantId, project_id: projectId } of await this.prompts.projectsWithPrompts()) {
      if (!planAtLeast((await this.deps.tenants.get(tenantId)).plan, 'team')) continue;
      const { clusters } = await this.deps.failures.listClusters(tenantId, { project_id: projectId, from: since.toISOString(), limit: BATCH });
      for (const cluster of clusters.filter((c) => c.trace_count >= this.settings.recurringMinTraces)) {
        if (await this.repo.clusterBusy(tenantId, projectId, cluster.signature, cooldown)) continue;
        const promptId = await this.promptOf(tenantId, projectId, cluster);
        if (promptId && (await this.deployments.propose(tenantId, projectId, promptId, cluster.signature, SYSTEM(SYSTEM_ACTORS.recurringCluster)))) proposed++;
      }
    }
    return proposed;
  }

  /** The prompt the failing spans name in metadata.prompt_name, else the project's only prompt. */
  private async promptOf(tenantId: string, projectId: string, cluster: FailureCluster): Promise<string | null> {
    const prompts = await this.prompts.ofProject(tenantId, projectId);
    for (const traceId of cluster.example_trace_ids) {
      const trace = await this.deps.traces.get(tenantId, traceId).catch(() => null);
      const named = trace?.spans.map((s) => s.metadata.prompt_name).find((n) => typeof n === 'string' && prompts.some((p) => p.name === n));
      if (named) return prompts.find((p) => p.name === named)!.id;
    }
    return prompts.length === 1 ? prompts[0]!.id : null;
  }

  private async examples(d: DeploymentRow, traceIds: readonly string[]): Promise<Example[]> {
    const traces = await Promise.all(traceIds.map((id) => this.deps.traces.get(d.tenant_id, id).catch(() => null)));
    return traces.flatMap((t) => (t ? [exampleOf(t, d.prompt_name)] : []));
  }

  /** The project's newest traces without an error, outside the cluster: what the candidate must not break. */
  private async passing(d: DeploymentRow, exclude: ReadonlySet<string>): Promise<Example[]> {
    const { traces } = await this.deps.traces.list(d.tenant_id, { project_id: d.project_id }, { limit: 50 });
    const picked = traces.filter((t) => t.error === null && !exclude.has(t.id)).slice(0, this.settings.passingSample);
    return this.examples(d, picked.map((t) => t.id));
  }
}

const unusable = (reason: string): AbReport => ({
  samples: { failing: 0, passing: 0 },
  metrics: [],
  failure_rate_before: null,
  failure_rate_after: null,
  decision: 'fail',
  reason,
});

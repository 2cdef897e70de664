import type { JobEnqueuer } from '../../jobs/enqueue.js';
import { appendAudit } from '../../platform/audit/chain.js';
import type { Sql } from '../../stores/pg.js';
import type { EvalRuleService, EvalService } from '../evals/service.js';
import type { FailureService } from '../failures/service.js';
import type { AppLogger } from '../../platform/log.js';
import type { ProjectService } from '../projects/service.js';
import type { TenantService } from '../tenants/service.js';
import type { TraceService } from '../traces/service.js';
import type { WebhookService } from '../webhooks/service.js';
import { AbHarness } from './ab-harness.js';
import { PromptDeploymentService, type DeploymentQueue } from './deployment-service.js';
import { deploymentRepository } from './deployments-repo.js';
import { PromptLifecycle } from './lifecycle.js';
import { DeploymentMonitor } from './monitor.js';
import { PromptProposer, type ProviderSource } from './proposer.js';
import { promptRepository } from './repo.js';
import { PromptService } from './service.js';

export interface PromptDeps {
  sql: Sql;
  jobs: Pick<JobEnqueuer, 'add'>;
  projects: ProjectService;
  tenants: Pick<TenantService, 'get'>;
  failures: Pick<FailureService, 'listClusters'>;
  traces: Pick<TraceService, 'get' | 'list'>;
  evals: Pick<EvalService, 'getVersion' | 'scoreItem' | 'list'>;
  evalRules: Pick<EvalRuleService, 'list'>;
  llmConnections: ProviderSource;
  webhooks: Pick<WebhookService, 'emit'>;
  log: AppLogger;
}

/** The prompts module's services, built once by the composition root (src/services.ts). */
export function buildPromptServices(deps: PromptDeps) {
  const promptRepo = promptRepository(deps.sql);
  const deploymentRepo = deploymentRepository(deps.sql);
  const prompts = new PromptService(promptRepo, deps.projects);
  const queue: DeploymentQueue = (tenantId, deploymentId) => deps.jobs.add('prompts', { tenant_id: tenantId, deployment_id: deploymentId });
  const promptDeployments = new PromptDeploymentService(
    deploymentRepo,
    prompts,
    deps.failures,
    deps.webhooks,
    (tenantId, entry) => appendAudit(deps.sql, tenantId, entry),
    queue,
    deps.log,
  );
  const promptLifecycle = new PromptLifecycle(
    deploymentRepo,
    promptRepo,
    promptDeployments,
    new PromptProposer(deps.llmConnections),
    new AbHarness(deps.llmConnections, deps.evalRules, deps.evals),
    new DeploymentMonitor(deploymentRepo, deps.evals, deps.traces),
    { failures: deps.failures, traces: deps.traces, projects: deps.projects, tenants: deps.tenants, queue, log: deps.log },
  );
  return { prompts, promptDeployments, promptLifecycle };
}

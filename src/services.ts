import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import { abandonAfterMs } from './modules/ingest/batcher.js';
import { TraceRegistry } from './modules/ingest/registry-service.js';
import type { AppLogger } from './platform/log.js';
import { registryRepository } from './modules/ingest/registry-repo.js';
import { storedTraceRepository } from './modules/ingest/stored-repo.js';
import { IngestService } from './modules/ingest/service.js';
import { IngestCounters } from './modules/ingest/stats/counters.js';
import { ingestStatsRepository } from './modules/ingest/stats/repo.js';
import { IngestStatsService } from './modules/ingest/stats/service.js';
import { TraceWritePath } from './modules/ingest/write-path.js';
import { VectorDimensions } from './modules/search/dimensions-service.js';
import { vectorErasureRepository } from './modules/search/erasure-repo.js';
import { VectorErasure } from './modules/search/erasure-service.js';
import { SpanEmbedder } from './modules/search/embedder.js';
import { searchIndexRepository } from './modules/search/index-repo.js';
import { HnswIndexer } from './modules/search/indexer.js';
import { searchRepository } from './modules/search/repo.js';
import { SearchService } from './modules/search/service.js';
import { sqlRepository } from './modules/sql/repo.js';
import { SqlService } from './modules/sql/service.js';
import { searchStateRepository } from './modules/search/state-repo.js';
import { apiKeyRepository } from './modules/apikeys/repo.js';
import { ApiKeyService } from './modules/apikeys/service.js';
import { auditLogRepository } from './modules/audit/repo.js';
import { datasetExports } from './modules/datasets/export.js';
import { clickHouseParquet } from './stores/clickhouse-parquet.js';
import { datasetRepository } from './modules/datasets/repo.js';
import { DatasetRunService } from './modules/datasets/run-service.js';
import { runRepository } from './modules/datasets/runs-repo.js';
import { DatasetService } from './modules/datasets/service.js';
import { AuditService } from './modules/audit/service.js';
import { memberRepository } from './modules/members/repo.js';
import { MemberService } from './modules/members/service.js';
import { DashboardSignIn } from './modules/auth/service.js';
import { MeService } from './modules/me/service.js';
import { MetricsDirtyTracker } from './modules/metrics/dirty.js';
import { metricsRepository } from './modules/metrics/repo.js';
import { metricsWindowRepository } from './modules/metrics/windows.js';
import { MetricsRollup } from './modules/metrics/rollup.js';
import { MetricsService } from './modules/metrics/service.js';
import { PriceBook } from './modules/pricing/price-book-service.js';
import { pricingRepository } from './modules/pricing/repo.js';
import { PricingService } from './modules/pricing/service.js';
import { projectRepository } from './modules/projects/repo.js';
import { ProjectService } from './modules/projects/service.js';
import { sessionRepository } from './modules/sessions/repo.js';
import { SessionService } from './modules/sessions/service.js';
import { TraceExportService } from './modules/traces/export-service.js';
import { traceExportRepository } from './modules/traces/export-repo.js';
import { traceLocator } from './modules/traces/locator-repo.js';
import { feedbackRepository } from './modules/feedback/repo.js';
import { ciRunRepository } from './modules/ci/repo.js';
import { CiService } from './modules/ci/service.js';
import { BillingService } from './modules/billing/service.js';
import { DeadLetterWriter } from './modules/dlq/dead-letter-service.js';
import { dlqRepository } from './modules/dlq/repo.js';
import { DlqService } from './modules/dlq/service.js';
import { savedFilterRepository } from './modules/saved-filters/repo.js';
import { SavedFilterService } from './modules/saved-filters/service.js';
import { FeedbackService } from './modules/feedback/service.js';
import { traceRepository } from './modules/traces/repo.js';
import { subjectTraceRepository } from './modules/traces/subject-repo.js';
import { SubjectTraceService } from './modules/traces/subject-service.js';
import { OnlineEvaluator } from './modules/evals/online.js';
import { evaluationRepository } from './modules/evals/repo.js';
import { EvalRuleService } from './modules/evals/rule-service.js';
import { evalRuleRepository } from './modules/evals/rules-repo.js';
import { EvalScorer } from './modules/evals/scorer.js';
import { EvalService, type EvalQueue } from './modules/evals/service.js';
import { TraceService } from './modules/traces/service.js';
import { OtlpExportService } from './modules/ingest/otlp/export.js';
import { otlpRepository } from './modules/ingest/otlp/repo.js';
import { OtlpTraceDeriver } from './modules/ingest/otlp/derive.js';
import { OtlpIngestService } from './modules/ingest/otlp/service.js';
import { otlpStateRepository } from './modules/ingest/otlp/state-repo.js';
import { tenantRepository } from './modules/tenants/repo.js';
import { TenantService } from './modules/tenants/service.js';
import { llmConnectionRepository } from './modules/llm-connections/repo.js';
import { LlmConnectionService } from './modules/llm-connections/service.js';
import { webhookRepository } from './modules/webhooks/repo.js';
import { WebhookService } from './modules/webhooks/service.js';
import { anomalyRepository } from './modules/anomalies/repo.js';
import { AnomalyService } from './modules/anomalies/service.js';
import { ClusterRecorder } from './modules/failures/cluster-service.js';
import { clusterRepository } from './modules/failures/clusters-repo.js';
import { FailureDetector } from './modules/failures/detector.js';
import { failureRuleRepository } from './modules/failures/repo.js';
import { FailureService } from './modules/failures/service.js';
import { controlActionRepository } from './modules/control/actions-repo.js';
import { controlConfigRepository } from './modules/control/config-repo.js';
import { ControlExecutor } from './modules/control/executor.js';
import { ControlConfigService } from './modules/control/config-service.js';
import { ControlActionService, controlLoopDepth } from './modules/control/service.js';
import { ControlSettler } from './modules/control/settle.js';
import { controlSignalRepository } from './modules/control/signals-repo.js';
import { ControlSignals } from './modules/control/signals-service.js';
import { ChainPlanner, ControlTrigger, type ControlQueue } from './modules/control/trigger.js';
import { buildPromptServices } from './modules/prompts/compose.js';
import { buildRetentionService } from './modules/retention/compose.js';
import { ComplianceService } from './modules/compliance/service.js';
import { buildPrivacyServices } from './modules/privacy/compose.js';
import { createAuditAnchorService } from './platform/audit/anchor.js';
import { JobEnqueuer } from './jobs/enqueue.js';
import type { Authenticator } from './platform/auth.js';
import type { ClickHouseStore } from './stores/clickhouse.js';
import type { Sql } from './stores/pg.js';

export interface ServiceDeps {
  config: Config;
  sql: Sql;
  redis: Redis;
  ch: ClickHouseStore;
  authenticator: Authenticator;
  /** Where services report what they survive rather than throw (the app's logger; the CLI passes none). */
  log?: AppLogger;
}

/** The composition root: every service is built here once and handed to routes, jobs and the CLI. */
export function buildServices(deps: ServiceDeps) {
  const projectRepo = projectRepository(deps.sql);
  const projects = new ProjectService(projectRepo);
  const apiKeys = new ApiKeyService(apiKeyRepository(deps.sql), projects, deps.authenticator);
  const tenants = new TenantService(deps.sql, tenantRepository(deps.sql), projects, apiKeys, deps.authenticator);
  // The membership decides who a session signs in as; the authenticator asks it (platform/auth.ts).
  const members = new MemberService(memberRepository(deps.sql), deps.authenticator);
  deps.authenticator.useMembers(members);
  const me = new MeService(members, tenants);
  const dashboardSignIn = new DashboardSignIn(deps.config.auth, tenants);
  const auditAnchors = createAuditAnchorService(deps.sql, deps.config);
  const audit = new AuditService(deps.sql, auditLogRepository(deps.sql), auditAnchors);
  const log = deps.log ?? { warn: () => {} };
  const pricingRepo = pricingRepository(deps.sql);
  const prices = new PriceBook(pricingRepo);
  const metricsDirty = new MetricsDirtyTracker(deps.sql);
  const batcherOptions = {
    maxRows: deps.config.ingest.flushRows,
    maxWaitMs: deps.config.ingest.flushMs,
    maxConcurrentWrites: deps.ch.embedded ? 1 : 4,
    writeTimeoutMs: deps.config.ingest.writeTimeoutMs,
  };
  const traceRegistry = new TraceRegistry(registryRepository(deps.sql), storedTraceRepository(deps.ch), metricsDirty, log, {
    instance: deps.config.instanceId,
    abandonAfterMs: abandonAfterMs(batcherOptions),
  });
  const otlpRepo = otlpRepository(deps.ch);
  // Received, stored and refused counts of ingest (GET /v1/ingest/stats); flushed on close (app.ts).
  const statsRepo = ingestStatsRepository(deps.sql);
  const ingestCounters = new IngestCounters(statsRepo, log);
  const ingestWrites = new TraceWritePath(
    {
      ch: deps.ch,
      registry: traceRegistry,
      states: otlpStateRepository(deps.sql),
      deriver: new OtlpTraceDeriver(otlpRepo),
      observer: metricsDirty,
      counters: ingestCounters,
      log,
    },
    batcherOptions,
  );
  const searchState = searchStateRepository(deps.sql);
  const vectorDimensions = new VectorDimensions(searchState);
  const ingest = new IngestService(traceRegistry, projects, ingestWrites, prices, vectorDimensions, ingestCounters);
  const ingestStats = new IngestStatsService(statsRepo, projects, ingestCounters);
  // Queue handles of the API side (closed with the app); workers consume them (jobs/workers.ts).
  const jobs = new JobEnqueuer(deps.config.redisUrl, deps.config.redisPrefix);
  const otlpIngest = new OtlpIngestService(traceRegistry, projects, ingestWrites, prices, ingestCounters);
  const otlpExport = new OtlpExportService(otlpRepo);
  const metricsRepo = metricsRepository(deps.ch);
  const metrics = new MetricsService(metricsRepo, projects, metricsWindowRepository(deps.ch));
  const metricsRollup = new MetricsRollup(metricsRepo, metricsDirty);
  const pricing = new PricingService(pricingRepo, prices);
  const traceRepo = traceRepository(deps.ch);
  const controlActionRepo = controlActionRepository(deps.sql);
  const controlSignalRepo = controlSignalRepository(deps.sql);
  // The failures and evals modules hand the control loop its trigger signals in their own transactions.
  const controlSignals = new ControlSignals(controlSignalRepo);
  const traces = new TraceService(traceRepo, traceLocator(deps.sql), controlLoopDepth(controlActionRepo));
  const savedFilters = new SavedFilterService(savedFilterRepository(deps.sql), projects);
  const feedback = new FeedbackService(feedbackRepository(deps.sql), traces);
  const evalRuleRepo = evalRuleRepository(deps.sql);
  const evalQueue: EvalQueue = {
    enqueue: (evaluations) => jobs.addBulk('evals', evaluations.map((e) => ({ tenant_id: e.tenant_id, eval_id: e.id }))),
  };
  const llmConnections = new LlmConnectionService(llmConnectionRepository(deps.sql), deps.config.providers, deps.config.secretKey);
  const searchRepo = searchRepository(deps.ch);
  const search = new SearchService(searchRepo, searchState, vectorDimensions, projects, llmConnections);
  const spanEmbedder = new SpanEmbedder(searchRepo, searchState, vectorDimensions, llmConnections, log);
  const hnswIndexer = new HnswIndexer(searchIndexRepository(deps.ch), searchState, log);
  const evalScorer = new EvalScorer(traces, llmConnections, prices);
  const evalRules = new EvalRuleService(evalRuleRepo, projects, tenants, evalScorer);
  const evals = new EvalService(evaluationRepository(deps.sql), evalRules, evalScorer, traces, tenants, evalQueue, controlSignals);
  const onlineEvals = new OnlineEvaluator(evalRuleRepo, evals, traces, evalQueue);
  const sql = new SqlService(sqlRepository(deps.ch), deps.redis, deps.config.redisPrefix);
  const traceExports = new TraceExportService(traceRepo, traceExportRepository(deps.ch));
  const sessions = new SessionService(sessionRepository(deps.ch), traces);
  const datasets = new DatasetService(datasetRepository(deps.sql), datasetExports(deps.sql, clickHouseParquet(deps.ch)), traces);
  const datasetRuns = new DatasetRunService(runRepository(deps.sql), datasets, evals, jobs, log);
  const dlqRepo = dlqRepository(deps.sql);
  const deadLetters = new DeadLetterWriter(dlqRepo);
  const webhooks = new WebhookService(webhookRepository(deps.sql, deadLetters), tenants, jobs, deps.config.webhooks, deps.config.secretKey, log);
  const failureRuleRepo = failureRuleRepository(deps.sql);
  const failureClusterRepo = clusterRepository(deps.sql);
  const failureClusters = new ClusterRecorder(failureClusterRepo, webhooks, controlSignals);
  const failures = new FailureService(failureRuleRepo, failureClusterRepo, failureClusters, projects);
  const failureDetector = new FailureDetector(failureRuleRepo, traces, failureClusters);
  const anomalies = new AnomalyService(anomalyRepository(deps.sql), metrics, webhooks);
  const controlQueue: ControlQueue = {
    enqueue: (actions) => jobs.addBulk('control', actions.map((a) => ({ tenant_id: a.tenant_id, action_id: a.id }))),
  };
  const controlConfig = new ControlConfigService(controlConfigRepository(deps.sql), projects, evalRules);
  const controlPlanner = new ChainPlanner(controlActionRepo, controlConfig, controlQueue);
  const controlTrigger = new ControlTrigger(controlSignalRepo, controlConfig, evals, controlPlanner);
  const controlSettler = new ControlSettler(controlActionRepo, evals, evalRules, failures, controlConfig, controlPlanner, controlQueue);
  const controlExecutor = new ControlExecutor(controlActionRepo, controlConfig, traces, llmConnections, prices, evals);
  const controlActions = new ControlActionService(controlActionRepo, evals, traces, llmConnections, projects, controlQueue);
  const dlq = new DlqService(dlqRepo, webhooks);
  const billing = new BillingService(tenants, traceRegistry, evals, evalRules, me);
  const { prompts, promptDeployments, promptLifecycle } = buildPromptServices({
    sql: deps.sql, jobs, projects, tenants, failures, traces, evals, evalRules, llmConnections, webhooks, log,
  });
  const ci = new CiService(ciRunRepository(deps.sql), datasetRuns);
  // The traces and search modules' services over their ClickHouse tables, for a data subject's traces and vectors.
  const subjectTraces = new SubjectTraceService(subjectTraceRepository(deps.ch));
  const vectorErasure = new VectorErasure(vectorErasureRepository(deps.ch));
  const dataSubjectRequests = buildPrivacyServices({
    sql: deps.sql, jobs, secretKey: deps.config.secretKey, log,
    modules: {
      registry: traceRegistry, evals, feedback, datasets, datasetRuns, failures, controlActions, controlSignals, promptDeployments,
      traces: subjectTraces, vectors: vectorErasure,
    },
  });
  const retention = buildRetentionService({
    sql: deps.sql, ch: deps.ch, log, projects, registry: traceRegistry, evals, feedback, failures, controlSignals, webhooks, anomalies, ingestStats,
  });
  const compliance = new ComplianceService(tenants, retention, { llmConnections, webhooks }, audit, dataSubjectRequests);
  return { compliance, retention, dataSubjectRequests, dashboardSignIn, members, prompts, promptDeployments, promptLifecycle, ci, billing, dlq, savedFilters, controlConfig, controlTrigger, controlSettler, controlExecutor, controlActions, search, spanEmbedder, hnswIndexer, failures, failureDetector, anomalies, webhooks, datasets, datasetRuns, llmConnections, evals, evalRules, onlineEvals, feedback, traces, traceExports, sql, sessions, projects, apiKeys, tenants, auditAnchors, audit, me, ingest, ingestCounters, ingestStats, traceRegistry, prices, ingestWrites, jobs, otlpIngest, otlpExport, metricsDirty, metrics, metricsRollup, pricing };
}

export type Services = ReturnType<typeof buildServices>;

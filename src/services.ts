import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import { GroupCommitBatcher } from './modules/ingest/batcher.js';
import { PriceBook } from './modules/ingest/price-book.js';
import { ingestRepository } from './modules/ingest/repo.js';
import { writeTraceBatch } from './modules/ingest/writer.js';
import { IngestService } from './modules/ingest/service.js';
import { apiKeyRepository } from './modules/apikeys/repo.js';
import { ApiKeyService } from './modules/apikeys/service.js';
import { auditLogRepository } from './modules/audit/repo.js';
import { AuditService } from './modules/audit/service.js';
import { userRepository } from './modules/me/repo.js';
import { MeService } from './modules/me/service.js';
import { MetricsDirtyTracker } from './modules/metrics/dirty.js';
import { metricsRepository } from './modules/metrics/repo.js';
import { MetricsRollup } from './modules/metrics/rollup.js';
import { MetricsService } from './modules/metrics/service.js';
import { pricingRepository } from './modules/pricing/repo.js';
import { PricingService } from './modules/pricing/service.js';
import { projectRepository } from './modules/projects/repo.js';
import { ProjectService } from './modules/projects/service.js';
import { sessionRepository } from './modules/sessions/repo.js';
import { SessionService } from './modules/sessions/service.js';
import { noControlActionsYet } from './modules/traces/control-loop-depth.js';
import { TraceExportService } from './modules/traces/export.js';
import { traceExportRepository } from './modules/traces/export-repo.js';
import { traceLocator } from './modules/traces/registry.js';
import { traceRepository } from './modules/traces/repo.js';
import { TraceService } from './modules/traces/service.js';
import { OtlpExportService } from './modules/otlp/export.js';
import { otlpRepository } from './modules/otlp/repo.js';
import { TraceRollupService } from './modules/otlp/rollup.js';
import { OtlpIngestService } from './modules/otlp/service.js';
import { tenantRepository } from './modules/tenants/repo.js';
import { TenantService } from './modules/tenants/service.js';
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
}

/** The composition root: every service is built here once and handed to routes, jobs and the CLI. */
export function buildServices(deps: ServiceDeps) {
  const projectRepo = projectRepository(deps.sql);
  const projects = new ProjectService(projectRepo);
  const apiKeys = new ApiKeyService(apiKeyRepository(deps.sql), projects, deps.authenticator);
  const tenants = new TenantService(deps.sql, tenantRepository(deps.sql), projectRepo, apiKeys, deps.authenticator);
  const me = new MeService(userRepository(deps.sql), tenants);
  const auditAnchors = createAuditAnchorService(deps.sql, deps.config);
  const audit = new AuditService(deps.sql, auditLogRepository(deps.sql), auditAnchors);
  const ingestRepo = ingestRepository(deps.sql);
  const prices = new PriceBook(ingestRepo);
  const metricsDirty = new MetricsDirtyTracker(deps.redis, deps.config.redisPrefix);
  // The metrics rollup learns of every committed trace row through metricsDirty (see aroundWrite).
  const batcher = new GroupCommitBatcher(
    (batch) =>
      metricsDirty.aroundWrite(batch.traces, () => writeTraceBatch(deps.ch, batch)),
    { maxRows: deps.config.ingest.flushRows, maxWaitMs: deps.config.ingest.flushMs, maxConcurrentWrites: deps.ch.embedded ? 1 : 4 },
  );
  const ingest = new IngestService(ingestRepo, projects, deps.ch, batcher, prices);
  // Queue handles of the API side (closed with the app); workers consume them (jobs/workers.ts).
  const jobs = new JobEnqueuer(deps.config.redisUrl, deps.config.redisPrefix);
  const otlpRepo = otlpRepository(deps.ch);
  const otlpIngest = new OtlpIngestService(ingestRepo, projects, batcher, prices, jobs);
  const otlpExport = new OtlpExportService(otlpRepo);
  const traceRollup = new TraceRollupService(otlpRepo, ingestRepo, metricsDirty);
  const metricsRepo = metricsRepository(deps.ch);
  const metrics = new MetricsService(metricsRepo, projects);
  const metricsRollup = new MetricsRollup(metricsRepo, metricsDirty);
  const pricing = new PricingService(pricingRepository(deps.sql), prices);
  const traceRepo = traceRepository(deps.ch);
  const traces = new TraceService(traceRepo, traceLocator(deps.sql), noControlActionsYet);
  const traceExports = new TraceExportService(traceRepo, traceExportRepository(deps.ch));
  const sessions = new SessionService(sessionRepository(deps.ch), traces);
  return { traces, traceExports, sessions, projects, apiKeys, tenants, auditAnchors, audit, me, ingest, prices, batcher, jobs, otlpIngest, otlpExport, traceRollup, metricsDirty, metrics, metricsRollup, pricing };
}

export type Services = ReturnType<typeof buildServices>;

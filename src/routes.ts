import type { FastifyInstance } from 'fastify';
import type { AppDeps } from './app.js';
import { apiKeyRoutes } from './modules/apikeys/routes.js';
import { auditRoutes } from './modules/audit/routes.js';
import { ingestRoutes } from './modules/ingest/routes.js';
import { healthRoutes } from './modules/health/routes.js';
import { meRoutes } from './modules/me/routes.js';
import { metricsRoutes } from './modules/metrics/routes.js';
import { pricingRoutes } from './modules/pricing/routes.js';
import { otlpRoutes } from './modules/otlp/routes.js';
import { projectRoutes } from './modules/projects/routes.js';
import { sessionRoutes } from './modules/sessions/routes.js';
import { traceRoutes } from './modules/traces/routes.js';
import { datasetRoutes } from './modules/datasets/routes.js';
import { datasetRunRoutes } from './modules/datasets/run-routes.js';
import { feedbackRoutes } from './modules/feedback/routes.js';
import { evalRoutes } from './modules/evals/routes.js';
import { evalRuleRoutes } from './modules/evals/rule-routes.js';
import { llmConnectionRoutes } from './modules/llm-connections/routes.js';
import { webhookRoutes } from './modules/webhooks/routes.js';
import { failureRoutes } from './modules/failures/routes.js';
import { anomalyRoutes } from './modules/anomalies/routes.js';
import { searchRoutes } from './modules/search/routes.js';

/** Every module's routes, in one list so the route-policy test sees them all. */
export async function registerModuleRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  await app.register(healthRoutes(deps));
  await app.register(projectRoutes);
  await app.register(apiKeyRoutes);
  await app.register(auditRoutes);
  await app.register(ingestRoutes);
  await app.register(traceRoutes);
  await app.register(feedbackRoutes);
  await app.register(evalRoutes);
  await app.register(evalRuleRoutes);
  await app.register(datasetRoutes);
  await app.register(datasetRunRoutes);
  await app.register(sessionRoutes);
  await app.register(otlpRoutes);
  await app.register(meRoutes);
  await app.register(metricsRoutes);
  await app.register(pricingRoutes);
  await app.register(llmConnectionRoutes);
  await app.register(webhookRoutes);
  await app.register(failureRoutes);
  await app.register(anomalyRoutes);
  await app.register(searchRoutes);
}

import swagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions, type RouteOptions } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import { registerAccessControl } from './platform/access.js';
import { registerAuditTrail } from './platform/audit/hook.js';
import { registerDeprecationHeaders } from './platform/deprecations.js';
import { Authenticator } from './platform/auth.js';
import { frameworkErrorHandler, registerErrorHandling } from './platform/http-errors.js';
import { newId } from './platform/ids.js';
import { registerJsonBodyParser } from './platform/json-body.js';
import { registerResponseDeadline } from './platform/response-deadline.js';
import { registerTextInputGuard } from './platform/text-input.js';
import { openApiOptions } from './platform/openapi.js';
import { addQueueDepthSource, httpRequestDuration } from './platform/metrics.js';
import { RateLimiter } from './platform/ratelimit.js';
import { buildServices, type Services } from './services.js';
import type { ClickHouseStore } from './stores/clickhouse.js';
import type { Sql } from './stores/pg.js';
import { registerModuleRoutes } from './routes.js';

export interface AppDeps {
  config: Config;
  sql: Sql;
  redis: Redis;
  ch: ClickHouseStore;
  logger?: FastifyServerOptions['logger'];
  /** Sees every route as it is registered (the route-policy test walks them with it). */
  onRoute?: (route: RouteOptions) => void;
}

export type App = FastifyInstance;

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
    /** What the access-control hook uses, for the edges that are not Fastify routes (OTLP/gRPC). */
    accessControl: { authenticator: Authenticator; limiter: RateLimiter };
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export const REDACTED_LOG_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  '*.secret',
  '*.api_key',
  '*.password',
  '*.token',
];

export async function buildApp(deps: AppDeps): Promise<App> {
  const app = Fastify({
    logger: deps.logger ?? { level: deps.config.logLevel, redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } },
    bodyLimit: deps.config.bodyLimitBytes,
    trustProxy: true,
    // Path parameters are bounded by each route's schema (a session id up to 256, a model name up
    // to 200 characters); the router's own default of 100 would refuse valid ones first.
    routerOptions: { maxParamLength: 512 },
    // A broken percent-escape in the path, or an overlong path parameter, answered in our error body.
    frameworkErrors: frameworkErrorHandler,
    // Log lines name the request the way responses do (X-Request-Id, error bodies' request_id).
    logController: new LogController({ requestIdLogLabel: 'request_id' }),
    // Keep a caller's correlation id when it is safe to echo; otherwise mint a time-ordered one.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : newId();
    },
  }).withTypeProvider<ZodTypeProvider>();

  if (deps.onRoute) app.addHook('onRoute', deps.onRoute);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  registerResponseDeadline(app, deps.config.responseDeadlineMs);
  registerJsonBodyParser(app);
  registerTextInputGuard(app);
  registerDeprecationHeaders(app);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    httpRequestDuration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  // The document is generated from each route's schemas, access policy and declared errors (platform/openapi.ts).
  await app.register(swagger, openApiOptions);

  const authenticator = new Authenticator(deps.sql, deps.config.auth);
  const services = buildServices({ ...deps, authenticator, log: app.log });
  app.decorate('services', services);
  // Before the first request: this process's writer is registered and its predecessors' pending
  // trace writes are settled, so a client retrying what a crash cut off is never answered 409.
  app.addHook('onReady', async () => {
    const settled = await services.traceRegistry.start();
    if (settled.committed + settled.released > 0) app.log.info(settled, 'settled trace writes left pending by an earlier process');
  });
  // Rows accepted before close are written (or their requests failed) before the stores close.
  app.addHook('onClose', async () => {
    await services.ingestWrites.drain();
    // After the last commit (whose failures count too), before the stores close.
    await services.ingestCounters.close();
    await services.traceRegistry.stop().catch((err: unknown) => app.log.warn({ err }, 'could not retire the ingest writer'));
  });
  const removeDepthSource = addQueueDepthSource(() => services.jobs.depths());
  app.addHook('onClose', async () => {
    removeDepthSource();
    await services.jobs.close();
  });
  const limiter = new RateLimiter(deps.redis, deps.config.redisPrefix, app.log);
  app.decorate('accessControl', { authenticator, limiter });
  registerAccessControl(app, authenticator, limiter);
  registerAuditTrail(app, deps.sql);
  await registerModuleRoutes(app, deps);
  return app;
}

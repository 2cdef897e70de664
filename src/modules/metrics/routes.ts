import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { QUERY_READ, requireAuth } from '../../platform/access.js';
import { metricsQuery, metricsResponse } from './schemas.js';

export const metricsRoutes: FastifyPluginAsyncZod = async (app) => {
  const metrics = app.services.metrics;

  app.get('/v1/metrics', {
    // not_found: a project_id that names no project of the tenant.
    config: { access: QUERY_READ, errors: ['not_found'] },
    schema: {
      tags: ['metrics'],
      summary: 'Trace metrics per minute, hour or day',
      description:
        'Trace counts, errors, latency percentiles, tokens and cost per UTC bucket, served from per-minute rollups ' +
        '(recomputed a few seconds after ingest). At most 1,440 buckets per request. Rate bucket: query.',
      querystring: metricsQuery,
      response: { 200: metricsResponse },
    },
    handler: async (request) => metrics.query(requireAuth(request).tenantId, request.query),
  });
};

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, ANY_TOKEN, requireAuth } from '../../platform/access.js';
import { anomalyList, listAnomaliesQuery } from './schemas.js';

export const anomalyRoutes: FastifyPluginAsyncZod = async (app) => {
  const anomalies = app.services.anomalies;

  app.get('/v1/anomalies', {
    config: { access: { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' }, errors: ['invalid_cursor'] },
    schema: {
      tags: ['anomalies'],
      summary: 'Anomalies in latency p95, error rate, cost and tokens per project, newest window first',
      querystring: listAnomaliesQuery,
      response: { 200: anomalyList },
    },
    handler: async (request) => anomalies.list(requireAuth(request).tenantId, request.query),
  });
};

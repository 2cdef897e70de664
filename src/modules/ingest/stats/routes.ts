import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { QUERY_READ, requireAuth } from '../../../platform/access.js';
import { ingestStatsQuery, ingestStatsResponse } from './schemas.js';

export const ingestStatsRoutes: FastifyPluginAsyncZod = async (app) => {
  const stats = app.services.ingestStats;

  app.get('/v1/ingest/stats', {
    // not_found: a project_id that names no project of the tenant.
    config: { access: QUERY_READ, errors: ['not_found', 'invalid_cursor'] },
    schema: {
      tags: ['ingest'],
      summary: 'Received, stored and refused traces and spans per project and minute',
      description:
        'Counts of native and OTLP (HTTP and gRPC) ingest per UTC minute of arrival: spans_received = spans_stored + the sum of ' +
        'refused (by reason), and traces likewise with refused_traces. Default range: the last hour; at most 24 hours. ' +
        'Counts decided in memory (received, most refusals) reach the table about once a second per server; stored counts ' +
        'are written by the transactions that store. See docs/ingest.md, "Received vs stored". Rate bucket: query.',
      querystring: ingestStatsQuery,
      response: { 200: ingestStatsResponse },
    },
    handler: async (request) => stats.query(requireAuth(request).tenantId, request.query),
  });
};

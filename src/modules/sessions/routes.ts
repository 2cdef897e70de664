import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { QUERY_READ, requireAuth } from '../../platform/access.js';
import { listSessionsQuery, sessionDetail, sessionList, sessionParams, sessionTracesQuery } from './schemas.js';

export const sessionRoutes: FastifyPluginAsyncZod = async (app) => {
  const sessions = app.services.sessions;

  app.get('/v1/sessions', {
    config: { access: QUERY_READ, errors: ['invalid_cursor'] },
    schema: {
      tags: ['sessions'],
      summary: 'Sessions (traces grouped by session_id), most recently active first',
      description: 'Aggregated over traces whose started_at lies in [from, to]; to defaults to now, from to 30 days before to.',
      querystring: listSessionsQuery,
      response: { 200: sessionList },
    },
    handler: async (request) => sessions.list(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/sessions/:id', {
    config: { access: QUERY_READ, errors: ['not_found', 'invalid_cursor'] },
    schema: {
      tags: ['sessions'],
      summary: "A session's totals and its traces, oldest first",
      params: sessionParams,
      querystring: sessionTracesQuery,
      response: { 200: sessionDetail },
    },
    handler: async (request) => sessions.get(requireAuth(request).tenantId, request.params.id, request.query),
  });
};

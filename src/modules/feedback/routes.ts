import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth } from '../../platform/access.js';
import { AppError } from '../../platform/errors.js';
import { createFeedbackBody, feedback, feedbackList, listFeedbackQuery } from './schemas.js';

export const feedbackRoutes: FastifyPluginAsyncZod = async (app) => {
  const service = app.services.feedback;

  app.post('/v1/feedback', {
    config: { access: { tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', audit: 'feedback.create' }, errors: ['not_found'] },
    schema: { tags: ['feedback'], summary: 'Score and comment on a trace', body: createFeedbackBody, response: { 201: feedback } },
    handler: async (request, reply) => {
      const auth = requireAuth(request);
      // A session always names its user and an API key itself; the guard only keeps created_by honest.
      const createdBy = auth.userId ?? auth.apiKeyId;
      if (!createdBy) throw new AppError(401, 'unauthorized', 'the credential names no user or API key');
      const created = await service.create(auth.tenantId, createdBy, request.body);
      request.auditResource = { type: 'feedback', id: created.id, details: { trace_id: created.trace_id, label: created.label } };
      return reply.status(201).send(created);
    },
  });

  app.get('/v1/feedback', {
    config: { access: { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' }, errors: ['invalid_cursor'] },
    schema: { tags: ['feedback'], summary: "The tenant's feedback, newest first", querystring: listFeedbackQuery, response: { 200: feedbackList } },
    handler: async (request) => service.list(requireAuth(request).tenantId, request.query),
  });
};

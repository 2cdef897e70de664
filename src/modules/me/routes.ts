import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, SESSION_ONLY, requireAuth } from '../../platform/access.js';
import { AppError } from '../../platform/errors.js';
import { me } from './schemas.js';

export const meRoutes: FastifyPluginAsyncZod = async (app) => {
  const service = app.services.me;

  app.get('/v1/me', {
    // Dashboard-only: an API key has no user behind it.
    config: { access: { tokens: SESSION_ONLY, roles: ALL_ROLES, scope: 'read' }, errors: ['not_found'] },
    schema: { tags: ['me'], summary: 'The signed-in dashboard user and their tenant', response: { 200: me } },
    handler: async (request) => {
      const auth = requireAuth(request);
      if (!auth.userId) throw new AppError(403, 'session_required', 'this endpoint needs a dashboard session');
      return service.get(auth.tenantId, auth.userId);
    },
  });
};

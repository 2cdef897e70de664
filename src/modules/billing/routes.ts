import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ANY_TOKEN, requireAuth } from '../../platform/access.js';
import { billing } from './schemas.js';

export const billingRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get('/v1/billing', {
    // Owners hold billing (spec, roles); query-scoped keys have no billing access.
    config: { access: { tokens: ANY_TOKEN, roles: ['owner'], scope: 'admin' } },
    schema: { tags: ['billing'], summary: "The plan, this month's usage against every quota, and the plan's limits", response: { 200: billing } },
    handler: async (request) => app.services.billing.get(requireAuth(request).tenantId),
  });
};

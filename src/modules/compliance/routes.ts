import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, ANY_TOKEN, requireAuth } from '../../platform/access.js';
import { complianceQuery, complianceReport } from './schemas.js';

export const complianceRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get('/v1/compliance', {
    // Read like the audit log (viewer and above, an external auditor's role); outside the query scope.
    config: { access: { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'admin' } },
    schema: {
      tags: ['compliance'],
      summary: 'Retention per project, encryption of stored secrets, audit anchors per day with their verification, open data-subject requests',
      querystring: complianceQuery,
      response: { 200: complianceReport },
    },
    handler: async (request) => app.services.compliance.report(requireAuth(request).tenantId, request.query.days),
  });
};

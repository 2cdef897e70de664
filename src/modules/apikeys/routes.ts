import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { apiKey, createApiKeyBody, createdApiKey } from './schemas.js';

export const apiKeyRoutes: FastifyPluginAsyncZod = async (app) => {
  const keys = app.services.apiKeys;

  app.get('/v1/apikeys', {
    // Key management is outside the `query` scope, hence 'admin'.
    config: { access: { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'admin' } },
    schema: { tags: ['apikeys'], summary: "The tenant's API keys, revoked ones included (never their secrets)", response: { 200: z.array(apiKey) } },
    handler: async (request) => keys.list(requireAuth(request).tenantId),
  });

  app.post('/v1/apikeys', {
    config: { access: { tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', audit: 'apikey.create' }, errors: ['not_found', 'no_active_project'] },
    schema: {
      tags: ['apikeys'],
      summary: 'Create an API key; its secret is in this response only',
      body: createApiKeyBody,
      response: { 201: createdApiKey },
    },
    handler: async (request, reply) => {
      const auth = requireAuth(request);
      const created = await keys.createForTenant(auth.tenantId, request.body, auth.userId);
      request.auditResource = { type: 'apikey', id: created.id, details: { name: created.name, scopes: created.scopes } };
      return reply.status(201).send(created);
    },
  });

  app.delete('/v1/apikeys/:id', {
    config: { access: { tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', audit: 'apikey.revoke' }, errors: ['not_found'] },
    schema: { tags: ['apikeys'], summary: 'Revoke an API key (other replicas refuse it within 30 s)', params: idParams, response: { 200: apiKey } },
    handler: async (request) => keys.revoke(requireAuth(request).tenantId, request.params.id),
  });
};

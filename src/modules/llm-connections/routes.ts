import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { createLlmConnectionBody, listLlmConnectionsQuery, llmConnection, llmConnectionList } from './schemas.js';

export const llmConnectionRoutes: FastifyPluginAsyncZod = async (app) => {
  const connections = app.services.llmConnections;
  // Credentials are key management: outside the `query` scope, like GET /v1/apikeys.
  const read = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'admin' } as const;

  app.post('/v1/llm-connections', {
    config: {
      access: { tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', audit: 'llm_connection.create' },
      errors: ['llm_connection.url.not_https', 'llm_connection.url.private_ip', 'llm_connection.url.unresolvable'],
    },
    schema: {
      tags: ['llm connections'],
      summary: "Add the tenant's own credentials for an LLM vendor; the key is stored encrypted and never returned",
      body: createLlmConnectionBody,
      response: { 201: llmConnection },
    },
    handler: async (request, reply) => {
      const auth = requireAuth(request);
      const createdBy = auth.userId ? `user:${auth.userId}` : auth.apiKeyId ? `apikey:${auth.apiKeyId}` : null;
      const created = await connections.create(auth.tenantId, request.body, createdBy);
      request.auditResource = {
        type: 'llm_connection',
        id: created.id,
        details: { provider: created.provider, name: created.name, base_url: created.base_url },
      };
      return reply.status(201).send(created);
    },
  });

  app.get('/v1/llm-connections', {
    config: { access: read, errors: ['invalid_cursor'] },
    schema: {
      tags: ['llm connections'],
      summary: "The tenant's LLM connections, oldest first (never their keys)",
      querystring: listLlmConnectionsQuery,
      response: { 200: llmConnectionList },
    },
    handler: async (request) => connections.list(requireAuth(request).tenantId, request.query.limit, request.query.cursor),
  });

  app.get('/v1/llm-connections/:id', {
    config: { access: read, errors: ['not_found'] },
    schema: { tags: ['llm connections'], summary: 'One LLM connection (never its key)', params: idParams, response: { 200: llmConnection } },
    handler: async (request) => connections.get(requireAuth(request).tenantId, request.params.id),
  });

  app.delete('/v1/llm-connections/:id', {
    config: { access: { tokens: ANY_TOKEN, roles: ['owner'], scope: 'write', audit: 'llm_connection.delete' }, errors: ['not_found'] },
    schema: {
      tags: ['llm connections'],
      summary: 'Remove an LLM connection; calls fall back to an older one or the server default',
      params: idParams,
      response: { 204: z.null() },
    },
    handler: async (request, reply) => {
      await connections.remove(requireAuth(request).tenantId, request.params.id);
      request.auditResource = { type: 'llm_connection', id: request.params.id };
      return reply.status(204).send(null);
    },
  });
};

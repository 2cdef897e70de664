import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ALL_ROLES, SESSION_ONLY, WRITERS, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { createSavedFilterBody, listSavedFiltersQuery, savedFilter, savedFilterList, updateSavedFilterBody } from './schemas.js';
import { AUTHOR_ONLY } from './service.js';

const READ = { tokens: SESSION_ONLY, roles: ALL_ROLES, scope: 'read' } as const;
const write = (audit: string) => ({ tokens: SESSION_ONLY, roles: WRITERS, scope: 'write', audit }) as const;
const tags = ['saved filters'];

export const savedFilterRoutes: FastifyPluginAsyncZod = async (app) => {
  const filters = app.services.savedFilters;

  app.post('/v1/saved-filters', {
    config: { access: write('saved_filter.create'), errors: ['not_found'] },
    schema: { tags, summary: 'Save a trace-list filter for everyone in the tenant', body: createSavedFilterBody, response: { 201: savedFilter } },
    handler: async (request, reply) => {
      const created = await filters.create(requireAuth(request), request.body);
      request.auditResource = { type: 'saved_filter', id: created.id, details: { name: created.name } };
      return reply.status(201).send(created);
    },
  });

  app.get('/v1/saved-filters', {
    config: { access: READ, errors: ['invalid_cursor'] },
    schema: { tags, summary: "The tenant's saved filters, the same for every member", querystring: listSavedFiltersQuery, response: { 200: savedFilterList } },
    handler: async (request) => filters.list(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/saved-filters/:id', {
    config: { access: READ, errors: ['not_found'] },
    schema: { tags, summary: 'One saved filter', params: idParams, response: { 200: savedFilter } },
    handler: async (request) => filters.get(requireAuth(request).tenantId, request.params.id),
  });

  app.patch('/v1/saved-filters/:id', {
    config: { access: write('saved_filter.update'), errors: ['not_found'], authorOnly: AUTHOR_ONLY },
    schema: { tags, summary: 'Rename a saved filter or replace its filters (author or owner)', params: idParams, body: updateSavedFilterBody, response: { 200: savedFilter } },
    handler: async (request) => {
      request.auditResource = { type: 'saved_filter', id: request.params.id, details: { fields: Object.keys(request.body) } };
      return filters.update(requireAuth(request), request.params.id, request.body);
    },
  });

  app.delete('/v1/saved-filters/:id', {
    config: { access: write('saved_filter.delete'), errors: ['not_found'], authorOnly: AUTHOR_ONLY },
    schema: { tags, summary: 'Delete a saved filter (author or owner)', params: idParams, response: { 204: z.null() } },
    handler: async (request, reply) => {
      await filters.remove(requireAuth(request), request.params.id);
      request.auditResource = { type: 'saved_filter', id: request.params.id };
      return reply.status(204).send(null);
    },
  });
};

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, ANY_TOKEN, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { dlqEntry, dlqList, listDlqQuery } from './schemas.js';

// Payloads of failed deliveries are not for query-scoped keys: 'admin' like the audit log.
const READ = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'admin' } as const;
const resolve = (audit: string) => ({ tokens: ANY_TOKEN, roles: ['owner'] as const, scope: 'write', audit }) as const;
const tags = ['dlq'];

export const dlqRoutes: FastifyPluginAsyncZod = async (app) => {
  const dlq = app.services.dlq;

  app.get('/v1/dlq', {
    config: { access: READ, errors: ['invalid_cursor'] },
    schema: { tags, summary: 'Dead-lettered work (failed webhook deliveries), newest first', querystring: listDlqQuery, response: { 200: dlqList } },
    handler: async (request) => dlq.list(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/dlq/:id', {
    config: { access: READ, errors: ['not_found'] },
    schema: { tags, summary: 'One DLQ entry', params: idParams, response: { 200: dlqEntry } },
    handler: async (request) => dlq.get(requireAuth(request).tenantId, request.params.id),
  });

  app.post('/v1/dlq/:id/retry', {
    config: { access: resolve('dlq.retry'), errors: ['not_found', 'dlq.resolved', 'dlq.not_retryable'] },
    schema: { tags, summary: 'Run a dead-lettered job again from the start (owner)', params: idParams, response: { 200: dlqEntry } },
    handler: async (request) => {
      request.auditResource = { type: 'dlq', id: request.params.id };
      return dlq.retry(requireAuth(request).tenantId, request.params.id);
    },
  });

  app.post('/v1/dlq/:id/discard', {
    config: { access: resolve('dlq.discard'), errors: ['not_found', 'dlq.resolved'] },
    schema: { tags, summary: 'Close a DLQ entry without running it again (owner)', params: idParams, response: { 200: dlqEntry } },
    handler: async (request) => {
      request.auditResource = { type: 'dlq', id: request.params.id };
      return dlq.discard(requireAuth(request).tenantId, request.params.id);
    },
  });
};

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth, type AccessPolicy } from '../../platform/access.js';
import type { ErrorCode } from '../../platform/openapi.js';
import { idParams } from '../../platform/schemas.js';
import {
  createWebhookBody,
  deliveryList,
  webhookPageQuery,
  updateWebhookBody,
  webhook,
  webhookList,
  webhookTestResult,
} from './schemas.js';

const URL_ERRORS: ErrorCode[] = ['webhook.url.not_https', 'webhook.url.private_ip', 'webhook.url.unresolvable'];

export const webhookRoutes: FastifyPluginAsyncZod = async (app) => {
  const webhooks = app.services.webhooks;
  // Webhook secrets are credentials: reads sit outside the `query` scope, like GET /v1/apikeys.
  const read: AccessPolicy = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'admin', plan: 'pro' };
  const write = (audit: string): AccessPolicy => ({ tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', plan: 'pro', audit });
  const tags = ['webhooks'];

  app.post('/v1/webhooks', {
    config: { access: write('webhook.create'), errors: URL_ERRORS },
    schema: { tags, summary: 'Register an HTTPS receiver for events; the secret is stored encrypted and never returned', body: createWebhookBody, response: { 201: webhook } },
    handler: async (request, reply) => {
      const auth = requireAuth(request);
      const createdBy = auth.userId ? `user:${auth.userId}` : auth.apiKeyId ? `apikey:${auth.apiKeyId}` : null;
      const created = await webhooks.create(auth.tenantId, request.body, createdBy);
      request.auditResource = { type: 'webhook', id: created.id, details: { url: created.url, events: created.events, enabled: created.enabled } };
      return reply.status(201).send(created);
    },
  });

  app.get('/v1/webhooks', {
    config: { access: read, errors: ['invalid_cursor'] },
    schema: { tags, summary: "The tenant's webhooks, oldest first (never their secrets)", querystring: webhookPageQuery, response: { 200: webhookList } },
    handler: async (request) => webhooks.list(requireAuth(request).tenantId, request.query.limit, request.query.cursor),
  });

  app.get('/v1/webhooks/:id', {
    config: { access: read, errors: ['not_found'] },
    schema: { tags, summary: 'One webhook (never its secret)', params: idParams, response: { 200: webhook } },
    handler: async (request) => webhooks.get(requireAuth(request).tenantId, request.params.id),
  });

  app.patch('/v1/webhooks/:id', {
    config: { access: write('webhook.update'), errors: ['not_found', ...URL_ERRORS] },
    schema: { tags, summary: "Change a webhook's URL, secret, events or enabled flag", params: idParams, body: updateWebhookBody, response: { 200: webhook } },
    handler: async (request) => {
      const { secret, ...shown } = request.body;
      request.auditResource = { type: 'webhook', id: request.params.id, details: { ...shown, secret_changed: secret !== undefined } };
      return webhooks.update(requireAuth(request).tenantId, request.params.id, request.body);
    },
  });

  // Owner only (the spec says both owner and member-or-owner; DESIGN.md §4 takes the stricter).
  // No plan: a tenant that left Pro can still remove what it registered.
  app.delete('/v1/webhooks/:id', {
    config: { access: { tokens: ANY_TOKEN, roles: ['owner'], scope: 'write', audit: 'webhook.delete' }, errors: ['not_found'] },
    schema: { tags, summary: 'Remove a webhook; its pending deliveries are dropped', params: idParams, response: { 204: z.null() } },
    handler: async (request, reply) => {
      await webhooks.remove(requireAuth(request).tenantId, request.params.id);
      request.auditResource = { type: 'webhook', id: request.params.id };
      return reply.status(204).send(null);
    },
  });

  app.post('/v1/webhooks/:id/test', {
    // The spec answers a plan refusal here with 403, not 402.
    config: { access: { ...write('webhook.test'), planDeniedStatus: 403 }, errors: ['not_found', ...URL_ERRORS] },
    schema: {
      tags,
      summary: "Send a signed ping to the webhook's URL and answer the receiver's status and first 4 KB of body (not logged)",
      params: idParams,
      response: { 200: webhookTestResult },
    },
    handler: async (request) => {
      const result = await webhooks.test(requireAuth(request).tenantId, request.params.id);
      request.auditResource = { type: 'webhook', id: request.params.id, details: { status: result.status } };
      return result;
    },
  });

  app.get('/v1/webhooks/:id/deliveries', {
    config: { access: read, errors: ['not_found', 'invalid_cursor'] },
    schema: {
      tags,
      summary: "A webhook's delivery attempts, newest first",
      params: idParams,
      querystring: webhookPageQuery,
      response: { 200: deliveryList },
    },
    handler: async (request) => webhooks.deliveries(requireAuth(request).tenantId, request.params.id, request.query.limit, request.query.cursor),
  });
};

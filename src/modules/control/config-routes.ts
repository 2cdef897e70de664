import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import {
  createPolicyBody,
  createRouteBody,
  listConfigQuery,
  modelRoute,
  modelRouteList,
  policy,
  policyList,
  updatePolicyBody,
  updateRouteBody,
} from './schemas.js';

const READ = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read', plan: 'team' } as const;
const write = (roles: typeof WRITERS, audit: string) => ({ tokens: ANY_TOKEN, roles, scope: 'write', plan: 'team', audit }) as const;
const tags = ['control'];

export const controlConfigRoutes: FastifyPluginAsyncZod = async (app) => {
  const config = app.services.controlConfig;

  app.post('/v1/model-routes', {
    config: { access: write(WRITERS, 'model_route.create'), errors: ['not_found'] },
    schema: { tags, summary: 'Create a model route: a model and the fallbacks fallback_model steps try in order', body: createRouteBody, response: { 201: modelRoute } },
    handler: async (request, reply) => {
      const route = await config.createRoute(requireAuth(request).tenantId, request.body);
      request.auditResource = { type: 'model_route', id: route.id, details: { name: route.name } };
      return reply.status(201).send(route);
    },
  });

  app.get('/v1/model-routes', {
    config: { access: READ, errors: ['invalid_cursor'] },
    schema: { tags, summary: "The tenant's model routes, by id", querystring: listConfigQuery, response: { 200: modelRouteList } },
    handler: async (request) => config.listRoutes(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/model-routes/:id', {
    config: { access: READ, errors: ['not_found'] },
    schema: { tags, summary: 'One model route', params: idParams, response: { 200: modelRoute } },
    handler: async (request) => config.getRoute(requireAuth(request).tenantId, request.params.id),
  });

  app.patch('/v1/model-routes/:id', {
    config: { access: write(WRITERS, 'model_route.update'), errors: ['not_found'] },
    schema: { tags, summary: 'Change a model route (fallbacks are replaced as a whole)', params: idParams, body: updateRouteBody, response: { 200: modelRoute } },
    handler: async (request) => {
      const route = await config.updateRoute(requireAuth(request).tenantId, request.params.id, request.body);
      request.auditResource = { type: 'model_route', id: route.id, details: { fields: Object.keys(request.body) } };
      return route;
    },
  });

  app.delete('/v1/model-routes/:id', {
    config: { access: write(['owner'], 'model_route.delete'), errors: ['not_found'] },
    schema: { tags, summary: 'Delete a model route (fallback_model steps naming it stop finding models)', params: idParams, response: { 204: z.null() } },
    handler: async (request, reply) => {
      await config.removeRoute(requireAuth(request).tenantId, request.params.id);
      request.auditResource = { type: 'model_route', id: request.params.id };
      return reply.status(204).send(null);
    },
  });

  app.post('/v1/policies', {
    config: { access: write(WRITERS, 'policy.create'), errors: ['not_found'] },
    schema: { tags, summary: 'Create a remediation policy: what triggers it, its steps and caps', body: createPolicyBody, response: { 201: policy } },
    handler: async (request, reply) => {
      const created = await config.createPolicy(requireAuth(request).tenantId, request.body);
      request.auditResource = { type: 'policy', id: created.id, details: { name: created.name } };
      return reply.status(201).send(created);
    },
  });

  app.get('/v1/policies', {
    config: { access: READ, errors: ['invalid_cursor'] },
    schema: { tags, summary: "The tenant's policies, by id", querystring: listConfigQuery, response: { 200: policyList } },
    handler: async (request) => config.listPolicies(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/policies/:id', {
    config: { access: READ, errors: ['not_found'] },
    schema: { tags, summary: 'One policy', params: idParams, response: { 200: policy } },
    handler: async (request) => config.getPolicy(requireAuth(request).tenantId, request.params.id),
  });

  app.patch('/v1/policies/:id', {
    config: { access: write(WRITERS, 'policy.update'), errors: ['not_found'] },
    schema: { tags, summary: 'Change a policy (trigger and steps are replaced as a whole)', params: idParams, body: updatePolicyBody, response: { 200: policy } },
    handler: async (request) => {
      const updated = await config.updatePolicy(requireAuth(request).tenantId, request.params.id, request.body);
      request.auditResource = { type: 'policy', id: updated.id, details: { fields: Object.keys(request.body) } };
      return updated;
    },
  });

  app.delete('/v1/policies/:id', {
    config: { access: write(['owner'], 'policy.delete'), errors: ['not_found'] },
    schema: { tags, summary: 'Delete a policy: its chains stop, its actions stay', params: idParams, response: { 204: z.null() } },
    handler: async (request, reply) => {
      await config.removePolicy(requireAuth(request).tenantId, request.params.id);
      request.auditResource = { type: 'policy', id: request.params.id };
      return reply.status(204).send(null);
    },
  });
};

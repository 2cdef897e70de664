import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import {
  createFailureRuleBody,
  failureCluster,
  failureClusterList,
  failureRule,
  failureRuleList,
  listClustersQuery,
  listFailureRulesQuery,
  updateFailureRuleBody,
} from './schemas.js';

const READ = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' } as const;
const write = (roles: typeof WRITERS, audit: string) => ({ tokens: ANY_TOKEN, roles, scope: 'write', audit }) as const;

export const failureRoutes: FastifyPluginAsyncZod = async (app) => {
  const failures = app.services.failures;

  app.post('/v1/failure-rules', {
    config: { access: write(WRITERS, 'failure_rule.create'), errors: ['not_found'] },
    schema: {
      tags: ['failures'],
      summary: 'Create a failure rule: spans stored from now on that match it are clustered as failures',
      body: createFailureRuleBody,
      response: { 201: failureRule },
    },
    handler: async (request, reply) => {
      const rule = await failures.createRule(requireAuth(request).tenantId, request.body);
      request.auditResource = { type: 'failure_rule', id: rule.id, details: { name: rule.name } };
      return reply.status(201).send(rule);
    },
  });

  app.get('/v1/failure-rules', {
    config: { access: READ, errors: ['invalid_cursor'] },
    schema: { tags: ['failures'], summary: "The tenant's failure rules, by id", querystring: listFailureRulesQuery, response: { 200: failureRuleList } },
    handler: async (request) => failures.listRules(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/failure-rules/:id', {
    config: { access: READ, errors: ['not_found'] },
    schema: { tags: ['failures'], summary: 'One failure rule', params: idParams, response: { 200: failureRule } },
    handler: async (request) => failures.getRule(requireAuth(request).tenantId, request.params.id),
  });

  app.patch('/v1/failure-rules/:id', {
    config: { access: write(WRITERS, 'failure_rule.update'), errors: ['not_found'] },
    schema: {
      tags: ['failures'],
      summary: 'Change a failure rule (match is replaced as a whole)',
      params: idParams,
      body: updateFailureRuleBody,
      response: { 200: failureRule },
    },
    handler: async (request) => {
      const rule = await failures.updateRule(requireAuth(request).tenantId, request.params.id, request.body);
      request.auditResource = { type: 'failure_rule', id: rule.id, details: { fields: Object.keys(request.body) } };
      return rule;
    },
  });

  app.delete('/v1/failure-rules/:id', {
    config: { access: write(['owner'], 'failure_rule.delete'), errors: ['not_found'] },
    schema: { tags: ['failures'], summary: 'Delete a failure rule (its clusters stay)', params: idParams, response: { 204: z.null() } },
    handler: async (request, reply) => {
      await failures.removeRule(requireAuth(request).tenantId, request.params.id);
      request.auditResource = { type: 'failure_rule', id: request.params.id };
      return reply.status(204).send(null);
    },
  });

  app.get('/v1/failures/clusters', {
    config: { access: READ, errors: ['invalid_cursor'] },
    schema: {
      tags: ['failures'],
      summary: 'Failure clusters of every type, most recently seen first',
      querystring: listClustersQuery,
      response: { 200: failureClusterList },
    },
    handler: async (request) => failures.listClusters(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/failures/clusters/:id', {
    config: { access: READ, errors: ['not_found'] },
    schema: { tags: ['failures'], summary: 'One failure cluster', params: idParams, response: { 200: failureCluster } },
    handler: async (request) => failures.getCluster(requireAuth(request).tenantId, request.params.id),
  });
};

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { createRuleBody, evalRule, evalRuleList, evalVersion, listRulesQuery, updateRuleBody } from './schemas.js';

const READ = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' } as const;
const write = (roles: typeof WRITERS, audit: string) => ({ tokens: ANY_TOKEN, roles, scope: 'write', audit }) as const;

export const evalRuleRoutes: FastifyPluginAsyncZod = async (app) => {
  const rules = app.services.evalRules;

  app.post('/v1/eval-rules', {
    config: { access: write(WRITERS, 'eval_rule.create'), errors: ['not_found', 'eval_rules_quota_exceeded', 'eval.no_llm_credentials'] },
    schema: {
      tags: ['eval rules'],
      summary: 'Create an eval rule: traces stored from now on that match it are scored automatically',
      body: createRuleBody,
      response: { 201: evalRule },
    },
    handler: async (request, reply) => {
      const rule = await rules.create(requireAuth(request).tenantId, request.body);
      request.auditResource = { type: 'eval_rule', id: rule.id, details: { name: rule.name, version_id: rule.current_version_id } };
      return reply.status(201).send(rule);
    },
  });

  app.get('/v1/eval-rules', {
    config: { access: READ, errors: ['invalid_cursor'] },
    schema: { tags: ['eval rules'], summary: "The tenant's eval rules, by id", querystring: listRulesQuery, response: { 200: evalRuleList } },
    handler: async (request) => rules.list(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/eval-rules/:id', {
    config: { access: READ, errors: ['not_found'] },
    schema: { tags: ['eval rules'], summary: 'One eval rule', params: idParams, response: { 200: evalRule } },
    handler: async (request) => rules.get(requireAuth(request).tenantId, request.params.id),
  });

  app.patch('/v1/eval-rules/:id', {
    config: { access: write(WRITERS, 'eval_rule.update'), errors: ['not_found', 'eval.no_llm_credentials'] },
    schema: {
      tags: ['eval rules'],
      summary: 'Change an eval rule; the result is snapshotted as its next version',
      params: idParams,
      body: updateRuleBody,
      response: { 200: evalRule },
    },
    handler: async (request) => {
      const rule = await rules.update(requireAuth(request).tenantId, request.params.id, request.body);
      request.auditResource = { type: 'eval_rule', id: rule.id, details: { fields: Object.keys(request.body), version_id: rule.current_version_id } };
      return rule;
    },
  });

  app.delete('/v1/eval-rules/:id', {
    config: { access: write(['owner'], 'eval_rule.delete'), errors: ['not_found'] },
    schema: { tags: ['eval rules'], summary: 'Delete an eval rule (its versions and evaluations stay)', params: idParams, response: { 204: z.null() } },
    handler: async (request, reply) => {
      await rules.remove(requireAuth(request).tenantId, request.params.id);
      request.auditResource = { type: 'eval_rule', id: request.params.id };
      return reply.status(204).send(null);
    },
  });

  app.get('/v1/eval-versions/:id', {
    config: { access: READ, errors: ['not_found'] },
    schema: { tags: ['eval rules'], summary: 'One immutable eval version (a snapshot of a rule)', params: idParams, response: { 200: evalVersion } },
    handler: async (request) => rules.getVersion(requireAuth(request).tenantId, request.params.id),
  });
};

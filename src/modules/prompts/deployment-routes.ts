import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, SESSION_ONLY, WRITERS, requireAuth } from '../../platform/access.js';
import type { AuthContext } from '../../platform/auth.js';
import { idParams } from '../../platform/schemas.js';
import { TRANSITIONS } from './deployments.js';
import type { PromptDeployment } from './schemas.js';
import { createDeploymentBody, deploymentList, listDeploymentsQuery, promptDeployment, rejectBody } from './schemas.js';

// Prompt deployments are dashboard-only and Team plan or above (spec, Authentication 3 and 7).
const READ = { tokens: SESSION_ONLY, roles: ALL_ROLES, scope: 'read', plan: 'team' } as const;
const decision = (audit: string) => ({ tokens: SESSION_ONLY, roles: ['owner'], scope: 'write', plan: 'team', audit }) as const;
const tags = ['prompts'];

const userOf = (auth: AuthContext) => auth.userId ?? auth.role;
const audited = (d: PromptDeployment) => ({ type: 'prompt_deployment', id: d.id, details: { status: d.status, prompt_name: d.prompt_name } });

export const promptDeploymentRoutes: FastifyPluginAsyncZod = async (app) => {
  const deployments = app.services.promptDeployments;

  app.post('/v1/prompts/deployments', {
    config: { access: { tokens: SESSION_ONLY, roles: WRITERS, scope: 'write', plan: 'team', audit: 'prompt_deployment.create' }, errors: ['not_found', 'prompt_deployment.open_exists'] },
    schema: { tags, summary: "Ask for an improved prompt for a failure cluster (A/B tested before it ships)", body: createDeploymentBody, response: { 201: promptDeployment } },
    handler: async (request, reply) => {
      const auth = requireAuth(request);
      const created = await deployments.create(auth.tenantId, request.body, { id: userOf(auth), system: false });
      request.auditResource = audited(created);
      return reply.status(201).send(created);
    },
  });

  app.get('/v1/prompts/deployments', {
    config: { access: READ, errors: ['invalid_cursor'] },
    schema: { tags, summary: 'Prompt deployments, newest first', querystring: listDeploymentsQuery, response: { 200: deploymentList } },
    handler: async (request) => deployments.list(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/prompts/deployments/:id', {
    config: { access: READ, errors: ['not_found'] },
    schema: { tags, summary: 'One prompt deployment with its A/B report', params: idParams, response: { 200: promptDeployment } },
    handler: async (request) => deployments.get(requireAuth(request).tenantId, request.params.id),
  });

  const decisions = [
    ['approve', 'Ship a deployment that passed its A/B test (owner)'],
    ['rollback', 'Roll back a shipped deployment, restoring the previous version (owner)'],
  ] as const;
  for (const [verb, summary] of decisions) {
    app.post(`/v1/prompts/deployments/:id/${verb}`, {
      config: { access: decision(`prompt_deployment.${verb}`), errors: ['not_found', 'prompt_deployment.invalid_state'], fromStates: TRANSITIONS[verb].from },
      schema: { tags, summary, params: idParams, response: { 200: promptDeployment } },
      handler: async (request) => {
        const auth = requireAuth(request);
        const moved = await deployments.decide(auth.tenantId, request.params.id, verb, userOf(auth));
        request.auditResource = audited(moved);
        return moved;
      },
    });
  }

  app.post('/v1/prompts/deployments/:id/reject', {
    config: { access: decision('prompt_deployment.reject'), errors: ['not_found', 'prompt_deployment.invalid_state'], fromStates: TRANSITIONS.reject.from },
    schema: { tags, summary: 'Reject a deployment in any non-terminal state (owner)', params: idParams, body: rejectBody, response: { 200: promptDeployment } },
    handler: async (request) => {
      const auth = requireAuth(request);
      const moved = await deployments.decide(auth.tenantId, request.params.id, 'reject', userOf(auth), request.body?.reason);
      request.auditResource = audited(moved);
      return moved;
    },
  });
};

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, QUERY_READ, SESSION_ONLY, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { controlAction, controlActionList, diffPending, listActionsQuery, projectMetric, projectMetricQuery, remediationDiff, type ActionStatus } from './schemas.js';

// Control actions are dashboard-only (spec, Authentication 3) and Team plan or above (7).
const DASHBOARD_READ = { tokens: SESSION_ONLY, roles: ALL_ROLES, scope: 'read', plan: 'team' } as const;
const decision = (audit: string) => ({ tokens: SESSION_ONLY, roles: ['owner'], scope: 'write', plan: 'team', audit }) as const;
const tags = ['control'];
// Only an action awaiting approval is approved or rejected (actions-repo.ts `decide`: where status = 'pending_approval').
const DECIDABLE = ['pending_approval'] as const satisfies readonly ActionStatus[];

export const controlRoutes: FastifyPluginAsyncZod = async (app) => {
  const actions = app.services.controlActions;

  app.get('/v1/control/actions', {
    config: { access: DASHBOARD_READ, errors: ['invalid_cursor'] },
    schema: { tags, summary: 'Control actions, newest first', querystring: listActionsQuery, response: { 200: controlActionList } },
    handler: async (request) => actions.list(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/control/actions/:id', {
    config: { access: DASHBOARD_READ, errors: ['not_found'] },
    schema: { tags, summary: 'One control action with its result', params: idParams, response: { 200: controlAction } },
    handler: async (request) => actions.get(requireAuth(request).tenantId, request.params.id),
  });

  app.get('/v1/control/actions/:id/diff', {
    config: { access: DASHBOARD_READ, errors: ['not_found', 'control.no_diff'] },
    schema: {
      tags,
      summary: 'Remediated versus original output: 202 while it or its re-scores run, then the diff',
      params: idParams,
      response: { 200: remediationDiff, 202: diffPending },
    },
    handler: async (request, reply) => {
      const diff = await actions.diff(requireAuth(request).tenantId, request.params.id);
      return diff ? diff : reply.status(202).send({ status: 'pending' });
    },
  });

  for (const [verb, status] of [['approve', 'approved'], ['reject', 'rejected']] as const) {
    app.post(`/v1/control/actions/:id/${verb}`, {
      config: { access: decision(`control_action.${verb}`), errors: ['not_found', 'control.action_state'], fromStates: DECIDABLE },
      schema: { tags, summary: `${verb === 'approve' ? 'Approve' : 'Reject'} an action awaiting approval (owner)`, params: idParams, response: { 200: controlAction } },
      handler: async (request) => {
        const auth = requireAuth(request);
        const action = await actions.decide(auth.tenantId, request.params.id, status, auth.userId ?? auth.role);
        request.auditResource = { type: 'control_action', id: action.id, details: { type: action.type, status: action.status } };
        return action;
      },
    });
  }

  app.get('/v1/projects/:id/metrics', {
    config: { access: QUERY_READ, errors: ['not_found'] },
    schema: { tags, summary: "A project's control-loop metric over a window (retry_cap_hit)", params: idParams, querystring: projectMetricQuery, response: { 200: projectMetric } },
    handler: async (request) => {
      const { metric, window } = request.query;
      return { metric, window, value: await actions.retryCapHits(requireAuth(request).tenantId, request.params.id, window) };
    },
  });
};

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { ciRun, createCiRunBody } from './schemas.js';

const tags = ['ci'];

/** For pipelines: an API key starts a gate and polls it (`looptrace ci gate` does both). */
export const ciRoutes: FastifyPluginAsyncZod = async (app) => {
  const ci = app.services.ci;

  app.post('/v1/ci/runs', {
    config: { access: { tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', audit: 'ci_run.create' }, errors: ['not_found', 'eval_quota_exceeded'] },
    schema: { tags, summary: 'Start a CI gate: a dataset run that passes when its pass rate reaches min_pass_rate', body: createCiRunBody, response: { 201: ciRun } },
    handler: async (request, reply) => {
      const run = await ci.create(requireAuth(request).tenantId, request.body);
      request.auditResource = { type: 'ci_run', id: run.id, details: { dataset_id: run.dataset_id, run_id: run.run_id, min_pass_rate: run.min_pass_rate } };
      return reply.status(201).send(run);
    },
  });

  app.get('/v1/ci/runs/:id', {
    config: { access: { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' }, errors: ['not_found'] },
    schema: { tags, summary: "A CI gate's progress and, once its run is over, whether it passed", params: idParams, response: { 200: ciRun } },
    handler: async (request) => ci.get(requireAuth(request).tenantId, request.params.id),
  });
};

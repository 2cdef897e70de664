import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { compareQuery, evalComparison, evalList, evalTriggered, evaluation, listEvalsQuery, triggerEvalBody } from './schemas.js';

const READ = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' } as const;

export const evalRoutes: FastifyPluginAsyncZod = async (app) => {
  const evals = app.services.evals;

  app.post('/v1/eval', {
    config: { access: { tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', audit: 'eval.trigger' }, errors: ['not_found', 'eval_quota_exceeded', 'eval.no_llm_credentials'] },
    schema: {
      tags: ['evaluations'],
      summary: 'Score a trace: the evaluation is queued (pending) and a worker scores it',
      description:
        'config.provider `openai` or `anthropic` runs an LLM judge (preset template or `prompt`); `builtin` runs the deterministic ' +
        'check named by `preset` with `params`. Counts against the monthly eval quota (402 eval_quota_exceeded).',
      body: triggerEvalBody,
      response: { 202: evalTriggered },
    },
    handler: async (request, reply) => {
      const triggered = await evals.trigger(requireAuth(request).tenantId, request.body);
      request.auditResource = { type: 'evaluation', id: triggered.eval_id, details: { trace_id: request.body.trace_id, metric_name: request.body.metric_name } };
      return reply.status(202).send(triggered);
    },
  });

  app.get('/v1/eval/compare', {
    config: { access: READ },
    schema: {
      tags: ['evaluations'],
      summary: "Compare a metric's completed evaluations in two windows of created_at",
      querystring: compareQuery,
      response: { 200: evalComparison },
    },
    handler: async (request) => evals.compare(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/eval/:id', {
    config: { access: READ, errors: ['not_found'] },
    schema: { tags: ['evaluations'], summary: 'One evaluation with its status, score and judge usage', params: idParams, response: { 200: evaluation } },
    handler: async (request) => evals.get(requireAuth(request).tenantId, request.params.id),
  });

  app.get('/v1/evals', {
    config: { access: READ, errors: ['invalid_cursor'] },
    schema: { tags: ['evaluations'], summary: 'Evaluations, newest first', querystring: listEvalsQuery, response: { 200: evalList } },
    handler: async (request) => evals.list(requireAuth(request).tenantId, request.query),
  });
};

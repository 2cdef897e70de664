import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireAuth } from '../../platform/access.js';
import { pageQuery } from '../../platform/cursor.js';
import { idParams } from '../../platform/schemas.js';
import { DATASET_READ, datasetWrite } from './routes.js';
import { createRunBody, evalRun, runDetail, runDetailQuery, runList, runParams } from './schemas.js';

export const datasetRunRoutes: FastifyPluginAsyncZod = async (app) => {
  const runs = app.services.datasetRuns;
  const tags = ['datasets'];

  app.post('/v1/datasets/:id/runs', {
    config: { access: datasetWrite('dataset.run.create'), errors: ['not_found', 'eval_quota_exceeded'] },
    schema: {
      tags,
      summary: "Score the dataset's current items with an eval version, in the background",
      description:
        'The run takes the items the dataset has now (item_count); items added later are not in it. The monthly eval quota is charged for item_count at once (402 eval_quota_exceeded, and no run, when it would be exceeded). An empty dataset gives a run of 0 items that completes at once.',
      params: idParams,
      body: createRunBody,
      response: { 201: evalRun },
    },
    handler: async (request, reply) => {
      const run = await runs.create(requireAuth(request).tenantId, request.params.id, request.body.eval_version_id);
      request.auditResource = { type: 'eval_run', id: run.id, details: { dataset_id: run.dataset_id, eval_version_id: run.eval_version_id, item_count: run.item_count } };
      return reply.status(201).send(run);
    },
  });

  app.get('/v1/datasets/:id/runs', {
    config: { access: DATASET_READ, errors: ['not_found', 'invalid_cursor'] },
    schema: { tags, summary: "A dataset's eval runs, newest first", params: idParams, querystring: z.object(pageQuery), response: { 200: runList } },
    handler: async (request) => runs.list(requireAuth(request).tenantId, request.params.id, request.query.limit, request.query.cursor),
  });

  app.get('/v1/datasets/:id/runs/:run_id', {
    config: { access: DATASET_READ, errors: ['not_found', 'invalid_cursor'] },
    schema: {
      tags,
      summary: 'One eval run with a page of its per-item results',
      description: 'results are in item id order, results_limit (default 50, at most 1,000) at a time; results_next_cursor, passed as results_cursor, gives the next page.',
      params: runParams,
      querystring: runDetailQuery,
      response: { 200: runDetail },
    },
    handler: async (request) => {
      const { id, run_id: runId } = request.params;
      const { results_limit: limit, results_cursor: cursor } = request.query;
      return runs.get(requireAuth(request).tenantId, id, runId, limit, cursor);
    },
  });
};

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth } from '../../platform/access.js';
import { pageQuery } from '../../platform/cursor.js';
import { idParams } from '../../platform/schemas.js';
import { EXPORT_CONTENT_TYPES } from '../traces/service.js';
import {
  addItemsBody,
  addedItems,
  createDatasetBody,
  dataset,
  datasetItem,
  datasetList,
  exportQuery,
  itemList,
  itemParams,
  listItemsQuery,
  updateItemBody,
} from './schemas.js';

export const DATASET_READ = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' } as const;
export const datasetWrite = (audit: string) => ({ tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', audit }) as const;

/** Datasets and their items; the runs are in run-routes.ts. */
export const datasetRoutes: FastifyPluginAsyncZod = async (app) => {
  const datasets = app.services.datasets;
  const tags = ['datasets'];

  app.post('/v1/datasets', {
    config: { access: datasetWrite('dataset.create') },
    schema: { tags, summary: 'Create a dataset', body: createDatasetBody, response: { 201: dataset } },
    handler: async (request, reply) => {
      const created = await datasets.create(requireAuth(request).tenantId, request.body);
      request.auditResource = { type: 'dataset', id: created.id, details: { name: created.name } };
      return reply.status(201).send(created);
    },
  });

  app.get('/v1/datasets', {
    config: { access: DATASET_READ, errors: ['invalid_cursor'] },
    schema: { tags, summary: "The tenant's datasets, oldest first", querystring: z.object(pageQuery), response: { 200: datasetList } },
    handler: async (request) => datasets.list(requireAuth(request).tenantId, request.query.limit, request.query.cursor),
  });

  app.get('/v1/datasets/:id', {
    config: { access: DATASET_READ, errors: ['not_found'] },
    schema: { tags, summary: 'One dataset', params: idParams, response: { 200: dataset } },
    handler: async (request) => datasets.get(requireAuth(request).tenantId, request.params.id),
  });

  app.delete('/v1/datasets/:id', {
    config: { access: { ...datasetWrite('dataset.delete'), roles: ['owner'] }, errors: ['not_found'] },
    schema: { tags, summary: 'Delete a dataset with its items and runs (owner only)', params: idParams, response: { 204: z.null() } },
    handler: async (request, reply) => {
      await datasets.delete(requireAuth(request).tenantId, request.params.id);
      return reply.status(204).send(null);
    },
  });

  app.post('/v1/datasets/:id/items', {
    config: { access: datasetWrite('dataset.items.add'), errors: ['not_found', 'validation_error'] },
    schema: {
      tags,
      summary: 'Add one item, or up to 1,000 as {items}; every trace must exist in the tenant',
      description: 'All or nothing: a trace id the tenant does not have is a 404 naming it (missing_trace_ids lists every such id), and no item is added.',
      params: idParams,
      body: addItemsBody,
      response: { 201: addedItems },
    },
    handler: async (request, reply) => {
      const items = await datasets.addItems(requireAuth(request).tenantId, request.params.id, request.body);
      request.auditResource = { type: 'dataset', id: request.params.id, details: { items: items.length } };
      return reply.status(201).send({ items });
    },
  });

  app.get('/v1/datasets/:id/items', {
    config: { access: DATASET_READ, errors: ['not_found', 'invalid_cursor'] },
    schema: { tags, summary: "A dataset's items in the order they were added", params: idParams, querystring: listItemsQuery, response: { 200: itemList } },
    handler: async (request) => {
      const { label, limit, cursor } = request.query;
      return datasets.listItems(requireAuth(request).tenantId, request.params.id, label, limit, cursor);
    },
  });

  app.patch('/v1/datasets/:id/items/:item_id', {
    config: { access: datasetWrite('dataset.items.update'), errors: ['not_found'] },
    schema: { tags, summary: "Set or clear an item's label", params: itemParams, body: updateItemBody, response: { 200: datasetItem } },
    handler: async (request) => {
      const { id, item_id: itemId } = request.params;
      request.auditResource = { type: 'dataset_item', id: itemId, details: { dataset_id: id, label: request.body.label } };
      return datasets.setItemLabel(requireAuth(request).tenantId, id, itemId, request.body.label);
    },
  });

  app.delete('/v1/datasets/:id/items/:item_id', {
    config: { access: datasetWrite('dataset.items.delete'), errors: ['not_found'] },
    schema: { tags, summary: 'Remove an item from a dataset', params: itemParams, response: { 204: z.null() } },
    handler: async (request, reply) => {
      const { id, item_id: itemId } = request.params;
      await datasets.deleteItem(requireAuth(request).tenantId, id, itemId);
      request.auditResource = { type: 'dataset_item', id: itemId, details: { dataset_id: id } };
      return reply.status(204).send(null);
    },
  });

  app.get('/v1/datasets/:id/export', {
    // Streams for as long as the client reads: the response deadline does not apply.
    config: { access: DATASET_READ, errors: ['not_found'], responseDeadline: false },
    schema: {
      tags,
      summary: "Export a dataset's items as CSV (default), JSONL or Parquet",
      description:
        "Columns id, trace_id, span_id, label, created_at, in id order; an unlabeled item's label is `unlabeled` in CSV and null in JSONL, a null span_id an empty CSV field. Parquet (application/vnd.apache.parquet) has the same columns and rows, typed: UUIDs, created_at a UTC millisecond timestamp, null span_id and label as in JSONL. At most the plan's export rows (Starter 100; Pro, Team, Business 5,000; Enterprise unlimited): X-Service-Truncated says whether the cap cut rows off. Streamed; a failure after the first byte aborts the connection.",
      params: idParams,
      querystring: exportQuery,
    },
    handler: async (request, reply) => {
      const auth = requireAuth(request);
      const { format, label } = request.query;
      const { truncated, body } = await datasets.export(auth.tenantId, auth.plan, request.params.id, format, label);
      return reply
        .type(EXPORT_CONTENT_TYPES[format])
        .header('content-disposition', `attachment; filename="dataset-${request.params.id}.${format}"`)
        .header('x-service-truncated', String(truncated))
        .send(body);
    },
  });
};

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { requireAuth, SESSION_ONLY, type AccessPolicy } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { createRequestBody, dataSubjectRequest, listRequestsQuery, requestList } from './schemas.js';

// An owner's dashboard session only: these requests reach every project's data of an end user.
const OWNER_READ: AccessPolicy = { tokens: SESSION_ONLY, roles: ['owner'], scope: 'admin' };
const OWNER_CREATE: AccessPolicy = { tokens: SESSION_ONLY, roles: ['owner'], scope: 'write', audit: 'data_subject_request.create' };
const tags = ['data-subject-requests'];

export const privacyRoutes: FastifyPluginAsyncZod = async (app) => {
  const requests = app.services.dataSubjectRequests;

  app.post('/v1/data-subject-requests', {
    config: { access: OWNER_CREATE },
    schema: {
      tags,
      summary: "Export or erase one end user's data across every project (owner session)",
      description:
        'The subject is exactly one of session_id, external_id, user_id (docs/api-decisions.md, "Data-subject requests", says which traces each matches). Answers 202 with the request queued; GET it for its status and counts. An erasure removes the traces and their spans, vectors, evaluations, feedback and dataset items from every store.',
      body: createRequestBody,
      response: { 202: dataSubjectRequest },
    },
    handler: async (request, reply) => {
      const auth = requireAuth(request);
      const created = await requests.create(auth.tenantId, auth.userId!, request.body);
      // Kinds only: the subject's value never enters the audit chain.
      request.auditResource = { type: 'data_subject_request', id: created.id, details: { type: created.type, subject_kind: created.subject_kind } };
      return reply.status(202).send(created);
    },
  });

  app.get('/v1/data-subject-requests', {
    config: { access: OWNER_READ, errors: ['invalid_cursor'] },
    schema: { tags, summary: 'Data-subject requests, newest first (owner session)', querystring: listRequestsQuery, response: { 200: requestList } },
    handler: async (request) => requests.list(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/data-subject-requests/:id', {
    config: { access: OWNER_READ, errors: ['not_found'] },
    schema: { tags, summary: 'One data-subject request: status, counts, download link (owner session)', params: idParams, response: { 200: dataSubjectRequest } },
    handler: async (request) => requests.get(requireAuth(request).tenantId, request.params.id),
  });

  app.get('/v1/data-subject-requests/:id/download', {
    // Streams for as long as the client reads: the response deadline does not apply.
    config: {
      access: OWNER_READ,
      errors: ['not_found', 'data_subject_request.not_export', 'data_subject_request.not_ready', 'data_subject_request.export_expired'],
      responseDeadline: false,
    },
    schema: {
      tags,
      summary: "A completed export's file as JSONL (owner session)",
      description:
        'One JSON object per line, each with a `kind` (trace, span, evaluation, feedback, dataset_item) and the fields the API shows for that record. Served for 7 days after the export completed; then 410.',
      params: idParams,
    },
    handler: async (request, reply) => {
      const body = await requests.download(requireAuth(request).tenantId, request.params.id);
      return reply
        .type('application/x-ndjson; charset=utf-8')
        .header('content-disposition', `attachment; filename="data-subject-request-${request.params.id}.jsonl"`)
        .send(body);
    },
  });
};

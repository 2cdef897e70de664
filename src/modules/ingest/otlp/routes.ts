import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, SESSION_ONLY, requireAuth, type AccessPolicy } from '../../../platform/access.js';
import { AppError } from '../../../platform/errors.js';
import { INGEST_ACCESS } from '../routes.js';
import { registerOtlpBodyParser, type OtlpBody } from './body.js';
import { ExportTraceServiceResponse } from './proto.js';
import { exportAuditResource } from './service.js';
import { exportQuery, exportTraceServiceResponse, otlpIngestQuery, tracesData } from './schemas.js';

const EXPORT_ACCESS: AccessPolicy = { tokens: SESSION_ONLY, roles: ALL_ROLES, scope: 'read', rateBucket: 'query', audit: false };

export const otlpRoutes: FastifyPluginAsyncZod = async (app) => {
  const { otlpIngest, otlpExport } = app.services;
  registerOtlpBodyParser(app, app.initialConfig.bodyLimit ?? 10 * 1024 * 1024);

  app.post('/v1/otlp/traces', {
    // validation_error: a session token names no project_id (an API key has its default project).
    config: { access: INGEST_ACCESS, errors: ['not_found', 'error.project.archived', 'trace_quota_exceeded', 'validation_error'] },
    schema: {
      tags: ['ingest'],
      summary: 'OTLP/HTTP trace export (protobuf or JSON, optionally gzip)',
      description:
        'An OTLP ExportTraceServiceRequest as application/x-protobuf or application/json, Content-Encoding gzip or none. ' +
        'Answers 200 with an ExportTraceServiceResponse in the request’s encoding once the spans are committed; spans that ' +
        'fail validation are counted in partialSuccess. Spans of a known trace merge into it. 402 trace_quota_exceeded, ' +
        '403 error.project.archived, 413 over the body limit (raw or decompressed). See docs/ingest.md.',
      consumes: ['application/x-protobuf', 'application/json'],
      querystring: otlpIngestQuery,
      response: { 200: exportTraceServiceResponse },
    },
    handler: async (request, reply) => {
      const body = request.body as OtlpBody | undefined;
      if (!body?.encoding) throw new AppError(415, 'unsupported_media_type', 'send application/x-protobuf or application/json');
      const result = await otlpIngest.export(requireAuth(request), body.resourceSpans, request.query.project_id);
      request.auditResource = exportAuditResource(result);
      const partial = result.rejectedSpans > 0 ? { rejectedSpans: result.rejectedSpans, errorMessage: result.errorMessage } : undefined;
      if (body.encoding === 'protobuf') {
        const message = ExportTraceServiceResponse.fromObject(partial ? { partialSuccess: partial } : {});
        // A protobuf body bypasses the JSON response schema (which documents the JSON variant).
        return (reply as FastifyReply).status(200).type('application/x-protobuf').send(Buffer.from(ExportTraceServiceResponse.encode(message).finish()));
      }
      return reply.status(200).send(partial ? { partialSuccess: { ...partial, rejectedSpans: String(partial.rejectedSpans) } } : {});
    },
  });

  app.get('/v1/otlp/export', {
    config: { access: EXPORT_ACCESS, errors: ['invalid_cursor'] },
    schema: {
      tags: ['traces'],
      summary: 'Export spans as OTLP TracesData JSON (dashboard only)',
      description:
        'At most 10,000 spans per response, in (project, trace, span) order. Spans whose start_time lies in [from, to] ' +
        '(default: the 24 h before now). X-Next-Cursor carries the cursor of the next page; absent on the last page.',
      querystring: exportQuery,
      response: { 200: tracesData },
    },
    handler: async (request, reply) => {
      const { data, nextCursor } = await otlpExport.page(requireAuth(request).tenantId, request.query);
      if (nextCursor) reply.header('x-next-cursor', nextCursor);
      return data;
    },
  });
};

import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { QUERY_READ, requireAuth } from '../../platform/access.js';
import { EXPORT_CONTENT_TYPES } from './export-service.js';
import type { JsonText } from './service.js';
import { exportTracesQuery, listTracesQuery, span, spanParams, traceDetail, traceIdParams, traceList, traceTree, type TraceDetail, type TraceTree } from './schemas.js';

export const traceRoutes: FastifyPluginAsyncZod = async (app) => {
  const { traces, traceExports } = app.services;

  app.get('/v1/traces', {
    config: { access: QUERY_READ, errors: ['invalid_cursor', 'error.tags_filter_incomplete'] },
    schema: {
      tags: ['traces'],
      summary: 'List traces, newest first',
      description:
        'Ordered by started_at desc, id desc; keyset pagination with limit and cursor. Sending only one of tag_key and tag_value is a 400 with code error.tags_filter_incomplete.',
      querystring: listTracesQuery,
      response: { 200: traceList },
    },
    handler: async (request) => {
      const { limit, cursor, ...filters } = request.query;
      return traces.list(requireAuth(request).tenantId, filters, { limit, cursor });
    },
  });

  app.get('/v1/traces/export', {
    config: { access: QUERY_READ, errors: ['error.tags_filter_incomplete'], responseDeadline: false },
    schema: {
      tags: ['traces'],
      summary: 'Export spans of the matching traces as CSV, JSONL or Parquet',
      description:
        'One row per span with the columns trace_id, span_id, name, type, model, created_at, duration_ms, prompt_tokens, completion_tokens, cost_usd, trace_input, trace_output, span_input, span_output, error. Traces in id order, spans by start time within a trace. Parquet (application/vnd.apache.parquet, traces.parquet) has the same columns and rows, typed: created_at a UTC millisecond timestamp, numbers as numbers, null for no error. Streamed; a failure after the first byte aborts the connection.',
      querystring: exportTracesQuery,
    },
    handler: async (request, reply) => {
      const { format, limit, ...filters } = request.query;
      const body = await traceExports.open(requireAuth(request).tenantId, filters, format, limit);
      return reply
        .type(EXPORT_CONTENT_TYPES[format])
        .header('content-disposition', `attachment; filename="traces.${format}"`)
        .send(body);
    },
  });

  app.get('/v1/traces/:id', {
    config: { access: QUERY_READ, errors: ['not_found'] },
    schema: {
      tags: ['traces'],
      summary: 'One trace with its spans and control_loop_depth',
      description:
        'The id is the trace UUID, or the same 16 bytes as 32 hex digits in either case: the OTel trace id of a trace received over OTLP as OTel logs print it. Anything else is a 400 naming both forms. Additive: otel_trace_id on the trace (null for native traces), otel_parent_span_id on spans.',
      params: traceIdParams,
      response: { 200: traceDetail },
    },
    // The schema documents the answer; the text is made by TraceService.detailJson (the same bytes
    // as the schema's serializer, much cheaper for traces of thousands of spans).
    handler: async (request, reply) => sendJsonText(reply, await traces.detailJson(requireAuth(request).tenantId, request.params.id)),
  });

  app.get('/v1/traces/:id/tree', {
    config: { access: QUERY_READ, errors: ['not_found'] },
    schema: {
      tags: ['traces'],
      summary: 'One trace with its span tree: spans without input, output and metadata',
      description:
        'Additive. The same answer as GET /v1/traces/{id} (same id forms, same trace fields, spans in the same order), except that each span has no input, output or metadata and instead input_chars and output_chars, their lengths in Unicode characters. For a trace of thousands of spans this is a small fraction of the detail; GET /v1/traces/{id}/spans/{span_id} loads one span whole.',
      params: traceIdParams,
      response: { 200: traceTree },
    },
    handler: async (request, reply) => sendJsonText(reply, await traces.treeJson(requireAuth(request).tenantId, request.params.id)),
  });

  app.get('/v1/traces/:id/spans/:span_id', {
    config: { access: QUERY_READ, errors: ['not_found'] },
    schema: {
      tags: ['traces'],
      summary: 'One span of a trace, whole',
      description:
        'Additive. The span as GET /v1/traces/{id} shows it, with input, output and metadata: what the span tree (GET /v1/traces/{id}/tree) leaves out. The trace id takes the same forms as there; span_id is the span UUID. 404 when the tenant has no such trace or the trace no such span.',
      params: spanParams,
      response: { 200: span },
    },
    handler: async (request) => traces.span(requireAuth(request).tenantId, request.params.id, request.params.span_id),
  });
};

/**
 * Sends JSON text made in chunks as the body, streamed, and says when it is sent (its buffers are
 * then reused). Fastify sends a stream as it is, so the route's response schema documents the
 * answer without serializing it. The whole answer is read before the first byte: nothing can fail
 * midway.
 */
function sendJsonText(reply: FastifyReply, text: JsonText) {
  reply.raw.once('close', text.sent);
  return reply.type('application/json; charset=utf-8').send(Readable.from(text.chunks) as unknown as TraceDetail & TraceTree);
}

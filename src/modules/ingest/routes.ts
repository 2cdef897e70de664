import type { FastifyError, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ANY_TOKEN, WRITERS, requireAuth, type AccessPolicy } from '../../platform/access.js';
import { batchBody, batchFailure, batchResult, ingestResult, traceInput } from './schemas.js';

export const INGEST_ACCESS: AccessPolicy = {
  tokens: ANY_TOKEN,
  roles: WRITERS,
  scope: 'write',
  rateBucket: 'ingest',
  audit: 'trace.ingest',
};

export const ingestRoutes: FastifyPluginAsyncZod = async (app) => {
  const ingest = app.services.ingest;
  /** Requests whose handler ran: the service counted them (GET /v1/ingest/stats). */
  const handled = new WeakSet<FastifyRequest>();
  /**
   * A request refused after its body was decoded but before its handler (the route's schema):
   * its traces are counted received and refused. Undecodable bodies carry nothing to count.
   */
  const countRefusedBody = (shape: 'trace' | 'batch') => async (request: FastifyRequest, _reply: unknown, error: FastifyError) => {
    if (handled.has(request) || !request.auth || request.body === undefined || !error.validation) return;
    ingest.countInvalidBody(request.auth, request.body, shape);
  };

  app.post('/v1/ingest', {
    config: { access: INGEST_ACCESS, errors: ['not_found', 'error.project.archived', 'trace_exists', 'trace_quota_exceeded', 'embedding.dimension_mismatch'] },
    schema: {
      tags: ['ingest'],
      summary: 'Ingest one trace with its spans',
      description:
        'Answers 201 only once the trace is committed to the trace store. 409 for an id whose trace is stored, 402 past the monthly ' +
        'quota, 403 error.project.archived, 503 with Retry-After when a store does not answer or an earlier write of the same id is still in flight.',
      body: traceInput,
      response: { 201: ingestResult },
    },
    onError: countRefusedBody('trace'),
    handler: async (request, reply) => {
      handled.add(request);
      const result = await ingest.ingestOne(requireAuth(request), request.body);
      request.auditResource = { type: 'trace', id: result.id, details: { span_count: result.span_count } };
      return reply.status(201).send(result);
    },
  });

  app.post('/v1/ingest/batch', {
    config: { access: INGEST_ACCESS },
    schema: {
      tags: ['ingest'],
      summary: 'Ingest up to 1,000 traces',
      description:
        'Per-item results. 201 all created, 207 mixed, 409 all duplicates; when every item failed alike, that status. ' +
        'An item answered 503 has an earlier write of the same id still in flight: retry it after Retry-After (set whenever one is).',
      body: batchBody,
      response: {
        201: batchResult,
        207: batchResult,
        400: batchFailure,
        402: batchFailure,
        403: batchFailure,
        404: batchFailure,
        409: batchFailure,
        422: batchFailure,
        503: batchFailure,
      },
    },
    onError: countRefusedBody('batch'),
    handler: async (request, reply) => {
      handled.add(request);
      const auth = requireAuth(request);
      const { status, results, retryAfterSeconds } = await ingest.ingestBatch(auth, request.body.traces);
      if (retryAfterSeconds !== undefined) reply.header('retry-after', String(retryAfterSeconds));
      const created = results.filter((r: { status: number }) => r.status === 201).length;
      request.auditResource = { type: 'trace', id: null, details: { traces: results.length, created } };
      if (status < 300) return reply.status(status as 201 | 207).send({ results });
      const first = results[0]!;
      return reply
        .status(status as 409)
        .send({ error: first.error ?? 'no trace was ingested', code: first.code, request_id: request.id, results });
    },
  });
};

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { unavailable } from './errors.js';

const timers = new WeakMap<FastifyRequest, NodeJS.Timeout>();

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `false` for routes whose own work may rightly take longer before the first byte (a whole-chain verification, an export). */
    responseDeadline?: false;
  }
}

/** The refusal of a request not answered within the deadline (HTTP here, gRPC in ingest/otlp/grpc.ts). */
export const deadlineExceeded = (deadlineMs: number) =>
  unavailable(`no answer within ${deadlineMs} ms: a backing store is not answering; retry later`, DEADLINE_RETRY_AFTER_SECONDS);

const DEADLINE_RETRY_AFTER_SECONDS = 2;

/**
 * A request that has not begun its answer `deadlineMs` after it arrived is answered `503
 * service_unavailable` with `Retry-After`. A store that refuses connections fails fast on its own;
 * this bounds the other kind, one that stops answering on connections already open (a partition, a
 * frozen host), which the Postgres client would otherwise wait out for as long as TCP takes. The
 * handler is not interrupted: if its work completes later, that is what a retry finds (an ingest
 * retry then gets 409, the trace being stored). Streams count as answered once their headers left.
 */
export function registerResponseDeadline(app: FastifyInstance, deadlineMs: number): void {
  if (deadlineMs <= 0) return;
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.config?.responseDeadline === false) return;
    const timer = setTimeout(() => {
      if (reply.sent || reply.raw.headersSent) return;
      // Through the error handler: the same body, headers and log line as every other 503.
      void reply.send(deadlineExceeded(deadlineMs));
    }, deadlineMs);
    timer.unref();
    timers.set(request, timer);
  });
  const clear = async (request: FastifyRequest) => clearTimeout(timers.get(request));
  app.addHook('onResponse', clear);
  app.addHook('onRequestAbort', clear);
}

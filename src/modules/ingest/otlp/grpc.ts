import {
  Metadata,
  Server,
  ServerCredentials,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import type { Config } from '../../../config.js';
import { enforceAccess } from '../../../platform/access.js';
import { appendRequestAudit } from '../../../platform/audit/hook.js';
import type { AuthContext, Authenticator } from '../../../platform/auth.js';
import { AppError } from '../../../platform/errors.js';
import { newId } from '../../../platform/ids.js';
import { rateLimited, rateLimitHeaders, type RateLimiter } from '../../../platform/ratelimit.js';
import { deadlineExceeded } from '../../../platform/response-deadline.js';
import type { Sql } from '../../../stores/pg.js';
import { INGEST_ACCESS } from '../routes.js';
import { decodeProtobufRequest } from './decode.js';
import { classify, toGrpcStatus } from './grpc-status.js';
import { ExportTraceServiceResponse } from './proto.js';
import { exportAuditResource, type OtlpIngestService } from './service.js';

/**
 * OTLP/gRPC: opentelemetry.proto.collector.trace.v1.TraceService/Export on @grpc/grpc-js, in front of
 * the same decode → map → commit path as POST /v1/otlp/traces (OtlpIngestService.export), with the
 * HTTP route's decisions reproduced here: bearer authentication, the ingest rate bucket, then
 * INGEST_ACCESS (scope write, writer roles), `project_id` (metadata here, the query string there),
 * the response deadline, the audit row. The body limit is grpc-js's max receive message length,
 * which it applies to the raw and the gzip-decompressed message alike. See docs/ingest.md.
 */

export const TRACE_EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

const bytes = (value: Buffer): Buffer => value;

/**
 * The service with pass-through (de)serializers: the handler decodes with the protobufjs schema of
 * the HTTP path (proto.ts), after authentication, so that a malformed request is INVALID_ARGUMENT
 * (grpc-js answers a throwing deserializer with INTERNAL) and an anonymous one never gets decoded.
 * Clients can use it too: `makeGenericClientConstructor(traceServiceDefinition, 'TraceService')`.
 */
export const traceServiceDefinition: ServiceDefinition = {
  Export: {
    path: TRACE_EXPORT_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: bytes,
    requestDeserialize: bytes,
    responseSerialize: bytes,
    responseDeserialize: bytes,
  },
};

/** The x-request-id a caller may choose, as the HTTP edge accepts it (app.ts). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const projectId = z.guid();

export interface OtlpGrpcDeps {
  services: { otlpIngest: Pick<OtlpIngestService, 'export'> };
  config: Pick<Config, 'host' | 'otlpGrpcPort' | 'bodyLimitBytes' | 'responseDeadlineMs'>;
  log: FastifyBaseLogger;
  /** The HTTP edge's own (app.accessControl): one API-key cache and one rate-limit window per process. */
  authenticator: Pick<Authenticator, 'authenticate'>;
  limiter: Pick<RateLimiter, 'hit'>;
  /** The audit chain's database. */
  sql: Sql;
  /** Override config.otlpGrpcPort (0: any free port, for tests) and HOST. */
  port?: number;
  host?: string;
}

export interface OtlpGrpcServer {
  /** The port bound (the actual one when asked for 0). */
  port: number;
  /**
   * Stops accepting calls and waits for those in flight (tryShutdown), cutting whatever is left
   * after `graceMs` (forceShutdown). Ingest in flight is answered within RESPONSE_DEADLINE_MS.
   */
  close(graceMs?: number): Promise<void>;
}

/** The one string value of a metadata key: undefined when absent, a refusal when repeated. */
function single(metadata: Metadata, key: string): string | undefined {
  const values = metadata.get(key).filter((v): v is string => typeof v === 'string');
  if (values.length > 1) throw new AppError(400, 'bad_request', `metadata ${key} given ${values.length} times`);
  return values[0];
}

function projectParam(metadata: Metadata): string | undefined {
  const value = single(metadata, 'project_id');
  if (value === undefined) return undefined;
  const parsed = projectId.safeParse(value);
  if (!parsed.success) throw new AppError(400, 'bad_request', 'metadata project_id: Invalid UUID', { details: [{ path: 'metadata.project_id', message: 'Invalid UUID' }] });
  return parsed.data;
}

/** Rejects with the HTTP edge's 503 if `work` has not settled within `ms` (0: no deadline); the work itself runs on. */
async function withinDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  if (ms <= 0) return work;
  let timer: NodeJS.Timeout | undefined;
  work.catch(() => {}); // settled after the deadline: nobody awaits it any more
  try {
    return await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(deadlineExceeded(ms)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

function hostPort(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

export async function startOtlpGrpcServer(deps: OtlpGrpcDeps): Promise<OtlpGrpcServer> {
  const { services, config, authenticator, limiter, sql } = deps;
  const port = deps.port ?? config.otlpGrpcPort;
  if (port === undefined) throw new Error('the OTLP/gRPC receiver is off (OTLP_GRPC_PORT=0)');
  const log = deps.log.child({ transport: 'otlp-grpc' });

  /** One Export call: the work the HTTP edge spreads over its hooks, the route handler and the audit trail. */
  async function exportCall(request: Buffer, metadata: Metadata, requestId: string, headers: Metadata): Promise<Buffer> {
    // The first, as Node keeps the first of repeated Authorization headers.
    const auth: AuthContext = await authenticator.authenticate(firstValue(metadata, 'authorization'));
    const window = await limiter.hit(auth.tenantId, auth.plan, INGEST_ACCESS.rateBucket ?? 'default');
    for (const [key, value] of Object.entries(rateLimitHeaders(window))) headers.set(key, value);
    if (window.exceeded) throw rateLimited(window);
    enforceAccess(auth, INGEST_ACCESS);
    const project = projectParam(metadata);
    const resourceSpans = decodeProtobufRequest(request);
    const result = await services.otlpIngest.export(auth, resourceSpans, project);
    if (INGEST_ACCESS.audit) {
      const resource = exportAuditResource(result);
      await appendRequestAudit(sql, log, auth, { action: INGEST_ACCESS.audit, resourceType: resource.type, resourceId: resource.id, requestId, details: resource.details });
    }
    const partial = result.rejectedSpans > 0 ? { rejectedSpans: result.rejectedSpans, errorMessage: result.errorMessage } : undefined;
    const response = ExportTraceServiceResponse.fromObject(partial ? { partialSuccess: partial } : {});
    return Buffer.from(ExportTraceServiceResponse.encode(response).finish());
  }

  const implementation: UntypedServiceImplementation = {
    Export: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
      const given = firstValue(call.metadata, 'x-request-id');
      const requestId = given && REQUEST_ID.test(given) ? given : newId();
      const headers = new Metadata();
      headers.set('x-request-id', requestId);
      withinDeadline(exportCall(call.request, call.metadata, requestId, headers), config.responseDeadlineMs).then(
        (response) => {
          call.sendMetadata(headers);
          callback(null, response);
        },
        (err: unknown) => {
          const error = classify(err);
          if (error.status >= 500 && !error.retryable) log.error({ err, request_id: requestId }, 'OTLP/gRPC export failed');
          else log.warn({ request_id: requestId, code: error.code, status: error.status }, error.message);
          callback(toGrpcStatus(error, requestId, headers));
        },
      );
    },
  };

  const server = new Server({
    // The HTTP body limit, applied by grpc-js to the message and again to its decompressed size.
    'grpc.max_receive_message_length': config.bodyLimitBytes,
  });
  server.addService(traceServiceDefinition, implementation);
  const host = deps.host ?? config.host;
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(hostPort(host, port), ServerCredentials.createInsecure(), (err, actual) => (err ? reject(err) : resolve(actual)));
  });
  log.info({ host, port: bound }, 'OTLP/gRPC trace receiver listening');

  let closing: Promise<void> | undefined;
  return {
    port: bound,
    close(graceMs = 15_000) {
      closing ??= new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          log.warn({ grace_ms: graceMs }, 'OTLP/gRPC calls still in flight after the grace period: cut off');
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      return closing;
    },
  };
}

/** The first string value of a metadata key, never a refusal. */
function firstValue(metadata: Metadata, key: string): string | undefined {
  const [value] = metadata.get(key);
  return typeof value === 'string' ? value : undefined;
}

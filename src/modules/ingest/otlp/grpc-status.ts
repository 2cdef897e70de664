import { Metadata, status as GrpcCode, type StatusObject } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { AppError } from '../../../platform/errors.js';
import { storeOutage } from '../../../platform/store-errors.js';

/**
 * The rich error model of gRPC (google.rpc.Status in the `grpc-status-details-bin` trailer), with
 * the two details we send: RetryInfo, which the OpenTelemetry Collector's OTLP exporter reads for
 * its back-off (and without which it never retries RESOURCE_EXHAUSTED), and ErrorInfo, carrying
 * the same stable error code an HTTP client finds in the body's `code`. Field numbers are those of
 * googleapis' google/rpc/status.proto and error_details.proto and protobuf's any/duration.proto.
 */
const RPC_PROTO = [
  `syntax = "proto3";
package google.protobuf;
message Any { string type_url = 1; bytes value = 2; }
message Duration { int64 seconds = 1; int32 nanos = 2; }`,
  `syntax = "proto3";
package google.rpc;
message Status { int32 code = 1; string message = 2; repeated google.protobuf.Any details = 3; }
message RetryInfo { google.protobuf.Duration retry_delay = 1; }
message ErrorInfo { string reason = 1; string domain = 2; map<string, string> metadata = 3; }`,
];

const root = new protobuf.Root();
for (const source of RPC_PROTO) protobuf.parse(source, root, { keepCase: false });
root.resolveAll();
const RpcStatus = root.lookupType('google.rpc.Status');
const RetryInfo = root.lookupType('google.rpc.RetryInfo');
const ErrorInfo = root.lookupType('google.rpc.ErrorInfo');

export const STATUS_DETAILS_KEY = 'grpc-status-details-bin';
export const ERROR_DOMAIN = 'looptrace';

/** Seconds a client should wait when a store did not answer (as the HTTP error handler says). */
const STORE_RETRY_AFTER_SECONDS = 2;

/**
 * HTTP status of an AppError → gRPC code, following the OTLP/gRPC spec's table: of these only
 * UNAVAILABLE is retried as such, RESOURCE_EXHAUSTED only when RetryInfo is present.
 */
function codeFor(status: number): GrpcCode {
  switch (status) {
    case 400:
    case 415:
    case 422:
      return GrpcCode.INVALID_ARGUMENT;
    case 401:
      return GrpcCode.UNAUTHENTICATED;
    // The monthly trace quota: nothing frees up before the month ends, so no RetryInfo (see retryDelay).
    case 402:
    case 413:
    case 429:
      return GrpcCode.RESOURCE_EXHAUSTED;
    case 403:
      return GrpcCode.PERMISSION_DENIED;
    case 404:
      return GrpcCode.NOT_FOUND;
    case 409:
      return GrpcCode.ALREADY_EXISTS;
    case 501:
      return GrpcCode.UNIMPLEMENTED;
    case 503:
      return GrpcCode.UNAVAILABLE;
    default:
      return status >= 400 && status < 500 ? GrpcCode.FAILED_PRECONDITION : GrpcCode.INTERNAL;
  }
}

/** The Retry-After an HTTP client would get, for the refusals a client may retry unchanged (429, 503). */
function retryDelaySeconds(error: AppError): number | undefined {
  if (!error.retryable) return undefined;
  const header = Number(error.headers['retry-after']);
  return Number.isFinite(header) && header >= 0 ? header : 1;
}

function any(typeName: string, type: protobuf.Type, value: Record<string, unknown>) {
  return { typeUrl: `type.googleapis.com/${typeName}`, value: type.encode(type.fromObject(value)).finish() };
}

/** What went wrong, as the HTTP edge would classify it: our refusals as they are, store outages as a retryable 503, the rest a hidden 500. */
export function classify(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (storeOutage(err)) {
    return new AppError(503, 'service_unavailable', 'a backing store is unavailable; retry later', {}, { 'retry-after': String(STORE_RETRY_AFTER_SECONDS) });
  }
  return new AppError(500, 'internal_error', 'internal server error');
}

/**
 * A refusal as a gRPC status: the code, the message an HTTP client reads in `error`, and trailers
 * holding `metadata` plus google.rpc.Status with ErrorInfo (reason = our error code, metadata =
 * request_id and the error's scalar extras such as required_plan) and, when retryable, RetryInfo.
 */
export function toGrpcStatus(error: AppError, requestId: string, metadata = new Metadata()): StatusObject {
  const code = codeFor(error.status);
  const info: Record<string, string> = { request_id: requestId };
  for (const [key, value] of Object.entries(error.extra)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') info[key] = String(value);
  }
  const details = [any('google.rpc.ErrorInfo', ErrorInfo, { reason: error.code, domain: ERROR_DOMAIN, metadata: info })];
  const delay = retryDelaySeconds(error);
  if (delay !== undefined) details.push(any('google.rpc.RetryInfo', RetryInfo, { retryDelay: { seconds: delay, nanos: 0 } }));
  const rpcStatus = RpcStatus.fromObject({ code, message: error.message, details });
  metadata.set(STATUS_DETAILS_KEY, Buffer.from(RpcStatus.encode(rpcStatus).finish()));
  return { code, details: error.message, metadata };
}

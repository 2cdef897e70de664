import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { jsToKeyValues } from '../../src/modules/ingest/otlp/attributes.js';
import { ExportTraceServiceRequest, ExportTraceServiceResponse } from '../../src/modules/ingest/otlp/proto.js';

export const otelTraceId = (): string => randomBytes(16).toString('hex');
export const otelSpanId = (): string => randomBytes(8).toString('hex');

/** 2026-11-01T12:00:00Z plus `offsetNs`, as OTLP nanoseconds (a string: beyond 2^53). */
export const BASE_NS = 1_793_534_400_000_000_000n;
export const ns = (offsetNs: bigint | number): string => (BASE_NS + BigInt(offsetNs)).toString();

export interface OtlpSpanOverrides {
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  name?: string;
  kind?: number | string;
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
  attributes?: Record<string, unknown>;
  events?: { name: string; timeUnixNano?: string; attributes?: Record<string, unknown> }[];
  status?: { code?: number | string; message?: string };
}

/** An OTLP/JSON span: an LLM call of 500 ms by default; `attributes` as a plain object. */
export function anOtlpSpan(overrides: OtlpSpanOverrides = {}) {
  const { attributes, events, ...rest } = overrides;
  return {
    traceId: otelTraceId(),
    spanId: otelSpanId(),
    name: 'chat gpt-4o-mini',
    kind: 3,
    startTimeUnixNano: ns(0),
    endTimeUnixNano: ns(500_000_000),
    attributes: jsToKeyValues(
      attributes ?? {
        'gen_ai.system': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.usage.input_tokens': 12,
        'gen_ai.usage.output_tokens': 3,
      },
    ),
    events: (events ?? []).map((e) => ({ timeUnixNano: e.timeUnixNano ?? ns(1), name: e.name, attributes: jsToKeyValues(e.attributes ?? {}) })),
    status: {},
    ...rest,
  };
}

/** An ExportTraceServiceRequest (OTLP/JSON) with one resource and scope. */
export function anOtlpRequest(spans: object[], resource: Record<string, unknown> = { 'service.name': 'checkout' }) {
  return {
    resourceSpans: [
      {
        resource: { attributes: jsToKeyValues(resource) },
        scopeSpans: [{ scope: { name: 'test-instrumentation', version: '1.2.3' }, spans }],
      },
    ],
  };
}

const hexToBytes = (hex: string | undefined) => (hex ? Buffer.from(hex, 'hex') : undefined);

/** The same request as protobuf bytes: ids as raw bytes, times as fixed64 (what the proto exporter sends). */
export function toProtobuf(request: ReturnType<typeof anOtlpRequest>): Buffer {
  const converted = {
    resourceSpans: request.resourceSpans.map((rs) => ({
      ...rs,
      scopeSpans: rs.scopeSpans.map((ss) => ({
        ...ss,
        spans: (ss.spans as ReturnType<typeof anOtlpSpan>[]).map((s) => ({
          ...s,
          traceId: hexToBytes(s.traceId),
          spanId: hexToBytes(s.spanId),
          parentSpanId: hexToBytes((s as { parentSpanId?: string }).parentSpanId),
        })),
      })),
    })),
  };
  return Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(converted)).finish());
}

export const gzip = (body: string | Buffer): Buffer => gzipSync(body);

export function decodeProtobufResponse(body: Buffer) {
  return ExportTraceServiceResponse.toObject(ExportTraceServiceResponse.decode(body), { longs: Number }) as {
    partialSuccess?: { rejectedSpans?: number; errorMessage?: string };
  };
}

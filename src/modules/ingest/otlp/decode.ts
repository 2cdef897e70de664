import { AppError } from '../../../platform/errors.js';
import { keyValuesToJs, type Attributes, type WireKeyValue } from './attributes.js';
import { ExportTraceServiceRequest } from './proto.js';
import { jsonExportRequest } from './schemas.js';

/** One OTLP span with ids as lowercase hex (null: not decodable) and times as exact nanoseconds. */
export interface OtlpSpan {
  traceId: string | null;
  spanId: string | null;
  /** '' for a root span. */
  parentSpanId: string | null;
  traceState: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Attributes;
  events: { name: string; timeNs: bigint; attributes: Attributes }[];
  links: { traceId: string | null; spanId: string | null; traceState: string; attributes: Attributes }[];
  status: { code: number; message: string };
}

export interface OtlpScopeSpans {
  scope: { name: string; version: string };
  spans: OtlpSpan[];
}

export interface OtlpResourceSpans {
  resource: Attributes;
  scopeSpans: OtlpScopeSpans[];
}

type Time = string | number | null | undefined;
type Enum = string | number | null | undefined;

/** The common shape of a decoded protobuf request (ids as bytes) and an OTLP/JSON one (ids as hex). */
interface WireRequest {
  resourceSpans?: {
    resource?: { attributes?: WireKeyValue[] | null } | null;
    scopeSpans?: {
      scope?: { name?: string | null; version?: string | null } | null;
      spans?: {
        traceId?: unknown;
        spanId?: unknown;
        parentSpanId?: unknown;
        traceState?: string | null;
        name?: string | null;
        kind?: Enum;
        startTimeUnixNano?: Time;
        endTimeUnixNano?: Time;
        attributes?: WireKeyValue[] | null;
        events?: { timeUnixNano?: Time; name?: string | null; attributes?: WireKeyValue[] | null }[] | null;
        links?: { traceId?: unknown; spanId?: unknown; traceState?: string | null; attributes?: WireKeyValue[] | null }[] | null;
        status?: { code?: Enum; message?: string | null } | null;
      }[] | null;
    }[] | null;
  }[] | null;
}

const badRequest = (message: string) => new AppError(400, 'bad_request', message);

const SPAN_KINDS: Record<string, number> = {
  SPAN_KIND_UNSPECIFIED: 0,
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
  SPAN_KIND_PRODUCER: 4,
  SPAN_KIND_CONSUMER: 5,
};
const STATUS_CODES: Record<string, number> = { STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2 };

const enumOf = (value: Enum, names: Record<string, number>): number =>
  typeof value === 'number' ? value : typeof value === 'string' ? (names[value] ?? 0) : 0;

function nanos(value: Time): bigint {
  if (value === null || value === undefined) return 0n;
  return typeof value === 'number' ? BigInt(Math.trunc(value)) : BigInt(value);
}

/** Protobuf ids are raw bytes. */
function idFromBytes(value: unknown): string | null {
  if (value === undefined || value === null) return '';
  return value instanceof Uint8Array ? Buffer.from(value).toString('hex') : null;
}

/**
 * OTLP/JSON ids are hex. Some senders use the plain proto3 JSON mapping (base64) instead; a
 * 16- or 8-byte base64 value cannot be mistaken for hex (its length differs), so accept it too.
 */
function idFromJson(value: unknown): string | null {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') return null;
  if (/^[0-9a-fA-F]*$/.test(value)) return value.length % 2 === 0 ? value.toLowerCase() : null;
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(value) && (value.length === 24 || value.length === 12)) {
    return Buffer.from(value, value.includes('-') || value.includes('_') ? 'base64url' : 'base64').toString('hex');
  }
  return null;
}

function fromWire(request: WireRequest, readId: (value: unknown) => string | null): OtlpResourceSpans[] {
  return (request.resourceSpans ?? []).map((rs) => ({
    resource: keyValuesToJs(rs.resource?.attributes),
    scopeSpans: (rs.scopeSpans ?? []).map((ss) => ({
      scope: { name: ss.scope?.name ?? '', version: ss.scope?.version ?? '' },
      spans: (ss.spans ?? []).map(
        (s): OtlpSpan => ({
          traceId: readId(s.traceId),
          spanId: readId(s.spanId),
          parentSpanId: readId(s.parentSpanId),
          traceState: s.traceState ?? '',
          name: s.name ?? '',
          kind: enumOf(s.kind, SPAN_KINDS),
          startNs: nanos(s.startTimeUnixNano),
          endNs: nanos(s.endTimeUnixNano),
          attributes: keyValuesToJs(s.attributes),
          events: (s.events ?? []).map((e) => ({ name: e.name ?? '', timeNs: nanos(e.timeUnixNano), attributes: keyValuesToJs(e.attributes) })),
          links: (s.links ?? []).map((l) => ({
            traceId: readId(l.traceId),
            spanId: readId(l.spanId),
            traceState: l.traceState ?? '',
            attributes: keyValuesToJs(l.attributes),
          })),
          status: { code: enumOf(s.status?.code, STATUS_CODES), message: s.status?.message ?? '' },
        }),
      ),
    })),
  }));
}

/** application/x-protobuf: an ExportTraceServiceRequest. */
export function decodeProtobufRequest(body: Uint8Array): OtlpResourceSpans[] {
  let decoded: WireRequest;
  try {
    decoded = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(body), { longs: String, enums: Number }) as WireRequest;
  } catch (err) {
    throw badRequest(`body is not a valid OTLP ExportTraceServiceRequest: ${err instanceof Error ? err.message : 'decode failed'}`);
  }
  return fromWire(decoded, idFromBytes);
}

/** application/json: OTLP/JSON, already parsed. */
export function decodeJsonRequest(body: unknown): OtlpResourceSpans[] {
  const parsed = jsonExportRequest.safeParse(body);
  if (!parsed.success) {
    const problems = parsed.error.issues.slice(0, 5).map((i) => `body.${i.path.join('.')}: ${i.message}`);
    throw badRequest(`body is not a valid OTLP/JSON ExportTraceServiceRequest: ${problems.join('; ')}`);
  }
  return fromWire(parsed.data, idFromJson);
}

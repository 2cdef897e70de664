import { z } from 'zod';
import type { WireAnyValue, WireKeyValue } from './attributes.js';

/*
 * OTLP/JSON as exporters send it (proto3 JSON mapping with OTLP's exceptions: ids are hex, enums
 * are integers). Lenient where real senders differ: int64 as string or number, enums also by name,
 * and unknown fields ignored. Id validity is checked per span, so one bad span does not sink a request.
 */

// Not z.int(): it stops at 2^53, and nanosecond times sent as JSON numbers are beyond that.
const integral = z.number().refine(Number.isInteger, 'must be an integer');
const int64 = z.union([z.string().regex(/^-?\d{1,20}$/), integral]);
const uint64 = z.union([z.string().regex(/^\d{1,20}$/), integral.refine((n) => n >= 0, 'must not be negative')]);
const enumValue = z.union([z.number().int(), z.string().max(64)]);

const anyValue: z.ZodType<WireAnyValue> = z.lazy(() =>
  z.object({
    stringValue: z.string().nullish(),
    boolValue: z.boolean().nullish(),
    intValue: int64.nullish(),
    doubleValue: z.union([z.number(), z.enum(['NaN', 'Infinity', '-Infinity'])]).nullish(),
    arrayValue: z.object({ values: z.array(anyValue).nullish() }).nullish(),
    kvlistValue: z.object({ values: z.array(keyValue).nullish() }).nullish(),
    bytesValue: z.string().nullish(),
  }),
);

const keyValue: z.ZodType<WireKeyValue> = z.lazy(() => z.object({ key: z.string().nullish(), value: anyValue.nullish() }));
const attributes = z.array(keyValue).nullish();

const jsonSpan = z.object({
  traceId: z.string().max(64).nullish(),
  spanId: z.string().max(64).nullish(),
  traceState: z.string().nullish(),
  parentSpanId: z.string().max(64).nullish(),
  name: z.string().nullish(),
  kind: enumValue.nullish(),
  startTimeUnixNano: uint64.nullish(),
  endTimeUnixNano: uint64.nullish(),
  attributes,
  events: z
    .array(z.object({ timeUnixNano: uint64.nullish(), name: z.string().nullish(), attributes }))
    .nullish(),
  links: z
    .array(z.object({ traceId: z.string().max(64).nullish(), spanId: z.string().max(64).nullish(), traceState: z.string().nullish(), attributes }))
    .nullish(),
  status: z.object({ code: enumValue.nullish(), message: z.string().nullish() }).nullish(),
});

export const jsonExportRequest = z.object({
  resourceSpans: z
    .array(
      z.object({
        resource: z.object({ attributes }).nullish(),
        scopeSpans: z
          .array(
            z.object({
              scope: z.object({ name: z.string().nullish(), version: z.string().nullish(), attributes }).nullish(),
              spans: z.array(jsonSpan).nullish(),
              schemaUrl: z.string().nullish(),
            }),
          )
          .nullish(),
        schemaUrl: z.string().nullish(),
      }),
    )
    .nullish(),
});
export type JsonExportRequest = z.infer<typeof jsonExportRequest>;

export const exportTraceServiceResponse = z
  .object({
    partialSuccess: z
      .object({
        rejectedSpans: z.string().describe('int64 as a decimal string (proto3 JSON mapping)'),
        errorMessage: z.string(),
      })
      .optional(),
  })
  .describe('ExportTraceServiceResponse');

export const otlpIngestQuery = z.object({
  project_id: z.guid().optional().describe('Project to write new traces to; default: the API key’s project'),
});


// GET /v1/otlp/export: OTLP TracesData JSON, exactly the spec's shape.

const exportKeyValue = z.object({ key: z.string(), value: z.custom<WireAnyValue>((v) => typeof v === 'object' && v !== null) });

export const tracesData = z
  .object({
    resourceSpans: z.array(
      z.object({
        resource: z.object({ attributes: z.array(exportKeyValue) }),
        scopeSpans: z.array(
          z.object({
            scope: z.object({ name: z.string(), version: z.string() }),
            spans: z.array(
              z.object({
                traceId: z.string(),
                spanId: z.string(),
                parentSpanId: z.string(),
                name: z.string(),
                startTimeUnixNano: z.string(),
                endTimeUnixNano: z.string(),
                attributes: z.array(exportKeyValue),
              }),
            ),
            schemaUrl: z.string(),
          }),
        ),
        schemaUrl: z.string(),
      }),
    ),
  })
  .describe('TracesData');
export type TracesData = z.infer<typeof tracesData>;

export const MAX_EXPORT_SPANS = 10_000;

export const exportQuery = z.object({
  project_id: z.guid().optional(),
  from: z.iso.datetime({ offset: true }).optional().describe('Inclusive lower bound of span start_time; default: to minus 24 h'),
  to: z.iso.datetime({ offset: true }).optional().describe('Inclusive upper bound of span start_time; default: now'),
  limit: z.coerce.number().int().min(1).max(MAX_EXPORT_SPANS).default(MAX_EXPORT_SPANS),
  cursor: z.string().min(1).max(1024).optional().describe('X-Next-Cursor of the previous page; carries that page’s filters'),
});
export type ExportQuery = z.infer<typeof exportQuery>;

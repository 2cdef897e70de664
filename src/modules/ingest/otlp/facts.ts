import type { SpanFields } from '../normalize.js';
import type { SpanSummary } from '../rows.js';
import { ATTR } from './semconv.js';
import type { OtlpSpanWrite } from './trace-state.js';

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

function stringMap(value: unknown): Record<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
  return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/**
 * One mapped OTLP span as the trace-state fold takes it: its summary (priced and classified), the
 * trace hints its attributes carry (docs/ingest.md), and the root fields it would give the trace.
 */
export function otlpSpanWrite(scope: { tenantId: string; projectId: string }, fields: SpanFields, summary: SpanSummary): OtlpSpanWrite {
  const meta = fields.metadata;
  const session = ATTR.session.map((k) => meta[k]).find((v): v is string => typeof v === 'string' && v !== '') ?? '';
  return {
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    traceId: fields.traceId,
    facts: {
      spanId: fields.spanId,
      parentless: fields.parentSpanId === null,
      name: fields.name,
      type: fields.type,
      model: fields.model,
      startNs: fields.startNs,
      endNs: fields.endNs,
      promptTokens: fields.promptTokens,
      completionTokens: fields.completionTokens,
      cost: summary.cost,
      error: fields.error,
      failureType: summary.failureType,
      session,
      tags: ATTR.tags.flatMap((k) => strings(meta[k])),
      tagMap: stringMap(meta[ATTR.tagMap]),
    },
    detail: { input: fields.input, output: fields.output, resource: meta[ATTR.meta.resource] },
  };
}

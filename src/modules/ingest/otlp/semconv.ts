/**
 * Attribute keys that feed span fields, in precedence order (first present wins), shared by OTLP
 * ingest and OTLP export: export writes each field under the first key of its list, so
 * re-ingesting an export reproduces the field even when the span keeps other keys in metadata.
 * Sources: OTel GenAI semantic conventions (gen_ai.*), OpenInference (input.value, llm.*,
 * openinference.span.kind), OpenLLMetry (traceloop.*, indexed gen_ai.prompt.N.*), ours (looptrace.*).
 */
export const ATTR = {
  type: 'looptrace.span.type',
  model: ['gen_ai.response.model', 'gen_ai.request.model', 'llm.model_name', 'llm.response.model', 'llm.request.model'],
  promptTokens: ['gen_ai.usage.input_tokens', 'gen_ai.usage.prompt_tokens', 'llm.token_count.prompt', 'llm.usage.prompt_tokens'],
  completionTokens: [
    'gen_ai.usage.output_tokens',
    'gen_ai.usage.completion_tokens',
    'llm.token_count.completion',
    'llm.usage.completion_tokens',
  ],
  cost: ['gen_ai.usage.cost', 'llm.cost'],
  input: ['gen_ai.prompt', 'input.value', 'traceloop.entity.input', 'gen_ai.input.messages'],
  output: ['gen_ai.completion', 'output.value', 'traceloop.entity.output', 'gen_ai.output.messages'],
  /** Indexed message lists: [prefix, field prefix to strip]. */
  inputMessages: [
    ['gen_ai.prompt', ''],
    ['llm.input_messages', 'message.'],
  ] as const,
  outputMessages: [
    ['gen_ai.completion', ''],
    ['llm.output_messages', 'message.'],
  ] as const,
  error: 'looptrace.error',
  failureType: 'looptrace.failure_type',
  statusCode: ['http.response.status_code', 'http.status_code'],
  /** Any of these on a span without an explicit kind makes it an LLM span. */
  llmHints: ['gen_ai.system', 'gen_ai.provider.name', 'gen_ai.request.model', 'gen_ai.response.model', 'llm.model_name'],
  /** Trace-level hints, left in span metadata and read by the rollup (first of each list wins). */
  session: ['session.id', 'gen_ai.conversation.id', 'traceloop.association.properties.session_id'],
  tags: ['tag.tags', 'looptrace.tags'],
  tagMap: 'looptrace.tag_map',
  /** Metadata keys holding OTLP structure that has no span column. */
  meta: {
    resource: 'otel.resource',
    scope: 'otel.scope',
    kind: 'otel.span_kind',
    traceState: 'otel.trace_state',
    events: 'otel.events',
    links: 'otel.links',
  },
} as const;

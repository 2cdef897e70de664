import { randomUUID } from 'node:crypto';

export interface SpanOverrides {
  [key: string]: unknown;
}

/** A native-ingest span; times default to a 500 ms LLM call starting at `start`. */
export function aSpan(overrides: SpanOverrides = {}, start = new Date('2026-11-01T12:00:00.000Z')) {
  return {
    id: randomUUID(),
    name: 'chat completion',
    type: 'llm',
    input: 'What is the capital of France?',
    output: 'Paris.',
    model: 'gpt-4o-mini',
    start_time: start.toISOString(),
    end_time: new Date(start.getTime() + 500).toISOString(),
    prompt_tokens: 12,
    completion_tokens: 3,
    ...overrides,
  };
}

/** A native-ingest trace with one span unless `spans` is given. */
export function aTrace(overrides: Record<string, unknown> = {}) {
  return {
    id: randomUUID(),
    name: 'answer question',
    input: 'What is the capital of France?',
    output: 'Paris.',
    spans: [aSpan()],
    ...overrides,
  };
}

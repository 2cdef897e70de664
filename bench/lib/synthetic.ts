/**
 * Vocabulary shared by the ingest bodies (bench/ingest.ts) and the generated dataset
 * (bench/generate.ts), so that both benches move rows of the same kind and size.
 */
import { FAILURE_TYPES } from '../../src/modules/ingest/types.js';

export const MODELS = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'claude-3-5-sonnet', 'claude-3-5-haiku', 'gemini-2.0-flash'] as const;
export const TRACE_NAMES = ['chat', 'rag-answer', 'summarize', 'classify-ticket', 'agent-run', 'extract-fields'] as const;
export const SPAN_TYPES = ['chain', 'llm', 'retriever', 'llm', 'tool', 'llm', 'tool', 'llm', 'retriever', 'llm'] as const;
export const SPANS_PER_TRACE = SPAN_TYPES.length;
export const CUSTOMERS = 10; // tag customer:cN, so a customer tag filter matches ~10% of traces
export const ENVS = ['prod', 'staging', 'dev', 'canary'] as const;
export const REGIONS = ['eu-west-1', 'us-east-1', 'ap-south-1'] as const;
export const FAILURE_PERCENT = 3;
export const ZERO_TOKEN_PERCENT = 5;
export { FAILURE_TYPES };

/** Error texts the ingest classifier maps to each failure type (explicit failure_type is sent too). */
export const FAILURE_ERRORS: Record<(typeof FAILURE_TYPES)[number], string> = {
  timeout: 'upstream request timed out after 30000 ms',
  rate_limit: 'Rate limit reached for requests; please retry after 20s',
  invalid_response: 'failed to parse model output: invalid JSON at position 118',
  context_length: "This model's maximum context length is 128000 tokens",
};

/** ~3,000 characters of prose: inputs and outputs are 200–800 character slices of it. */
export const PROSE = (() => {
  const words = (
    'the customer asked whether the invoice for march could be split across two cost centers and ' +
    'the assistant looked up the billing policy retrieved three documents summarized the relevant ' +
    'clauses and proposed a draft answer that cites the policy section on shared accounts while the ' +
    'tool call to the ledger service returned the open balance together with the due date of each ' +
    'line item so the final reply lists every amount explains the tax treatment and suggests next ' +
    'steps for approval by the finance team including a reminder about the quarterly close schedule'
  ).split(' ');
  let text = '';
  let i = 0;
  while (text.length < 3_200) {
    text += words[(i * 7 + (i >> 3)) % words.length] + (i % 17 === 16 ? '. ' : ' ');
    i += 1;
  }
  return text;
})();
export const TEXT_MIN = 200;
export const TEXT_SPREAD = 600; // 200..799 characters

/** The filtered list query of bench/query.ts: latency + token + tag filters over the generated data. */
export const QUERY_FILTER = { latency_min: '2000', token_count_min: '5000', tag_key: 'customer', tag_value: 'c3' } as const;

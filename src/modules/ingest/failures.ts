import type { FailureType } from './types.js';

// Error texts as providers and SDKs actually word them (OpenAI, Anthropic, Google, Bedrock, httpx, fetch).
const TEXT_RULES: [FailureType, RegExp][] = [
  ['context_length', /context[ _-]?length|context window|maximum context|too many tokens|prompt is too long|max_tokens.*exceed|token limit/i],
  ['rate_limit', /rate[ _-]?limit|too many requests|quota exceeded|resource[ _-]?exhausted|overloaded|throttl/i],
  ['timeout', /time[ _-]?d? ?out|timeout|deadline exceeded|ETIMEDOUT|ESOCKETTIMEDOUT/i],
  ['invalid_response', /invalid (json|response|output)|malformed|failed to parse|parse error|unexpected token|schema validation|not valid json/i],
];

/** Classifies one span: an explicit failure type wins, then the HTTP status, then the error text. */
export function classifyFailure(
  explicit: FailureType | null | undefined,
  statusCode: number | null | undefined,
  error: string | null | undefined,
): FailureType | null {
  if (explicit) return explicit;
  if (statusCode === 429) return 'rate_limit';
  if (statusCode === 408 || statusCode === 504) return 'timeout';
  if (statusCode === 413) return 'context_length';
  if (!error) return null;
  for (const [type, pattern] of TEXT_RULES) if (pattern.test(error)) return type;
  return null;
}

/**
 * The failure types ingest classifies a span's error into (ingest/failures.ts classifyFailure):
 * stored on spans and traces, filtered on by traces, matched by failure rules.
 */
export const FAILURE_TYPES = ['timeout', 'rate_limit', 'invalid_response', 'context_length'] as const;
export type FailureType = (typeof FAILURE_TYPES)[number];

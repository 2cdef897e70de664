import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { safeRegexPattern } from '../../platform/safe-regex.js';
import { isoDate, storableText } from '../../platform/schemas.js';
import { FAILURE_TYPES } from '../ingest/types.js';
import { checkBounds } from '../traces/schemas.js';

export const MAX_REGEX_CHARS = 500;

const errorRegex = safeRegexPattern(MAX_REGEX_CHARS);

const CONDITIONS = ['failure_types', 'error_contains', 'error_regex', 'status_codes', 'latency_ms_over', 'model', 'name'] as const;

/** What a span must show to match a rule: every condition given holds (AND). */
export const ruleMatch = z
  .object({
    failure_types: z.array(z.enum(FAILURE_TYPES)).min(1).max(FAILURE_TYPES.length).optional().describe("the span's classified failure type is one of these"),
    error_contains: storableText(z.string().min(1).max(500)).optional().describe("the span's error contains this text (case-insensitive)"),
    error_regex: errorRegex.optional().describe(`the span's error matches this pattern (case-insensitive; at most ${MAX_REGEX_CHARS} characters; patterns that can backtrack catastrophically are refused)`),
    status_codes: z.array(z.number().int().min(1).max(999)).min(1).max(100).optional().describe("the span's HTTP status code is one of these"),
    latency_ms_over: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe("the span's latency is above this many milliseconds"),
    model: z.string().min(1).max(200).optional().describe('exact span model'),
    name: z.string().min(1).max(1_000).optional().describe('exact span name'),
  })
  .strict()
  .refine((m) => CONDITIONS.some((c) => m[c] !== undefined), { message: `needs at least one of ${CONDITIONS.join(', ')}` })
  .describe('FailureRuleMatch');
export type RuleMatch = z.infer<typeof ruleMatch>;

const ruleFields = {
  name: storableText(z.string().trim().min(1).max(200)),
  project_id: z.guid().nullable().optional().describe('only spans of this project; null or absent = every project'),
  enabled: z.boolean().optional().describe('default true'),
  match: ruleMatch,
};

export const createFailureRuleBody = z.object(ruleFields).strict();
export type CreateFailureRule = z.infer<typeof createFailureRuleBody>;
export const updateFailureRuleBody = z.object(ruleFields).partial().strict();
export type UpdateFailureRule = z.infer<typeof updateFailureRuleBody>;

export const failureRule = z
  .object({
    id: z.guid(),
    tenant_id: z.guid(),
    name: z.string(),
    project_id: z.guid().nullable(),
    enabled: z.boolean(),
    match: z.record(z.string(), z.unknown()),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .describe('FailureRule');
export type FailureRule = z.infer<typeof failureRule>;

export const failureRuleList = z
  .object({ failure_rules: z.array(failureRule), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('FailureRuleList');
export const listFailureRulesQuery = z.object({ ...pageQuery, enabled: z.enum(['true', 'false']).optional() });

export const failureCluster = z
  .object({
    id: z.guid(),
    project_id: z.guid(),
    type: z.string().describe("a failure type (timeout, rate_limit, invalid_response, context_length), Unknown (an error of no known type), RuleMatch (a span without error that a rule matched), or a pipeline type such as RemediationRegression"),
    signature: z.string().describe('stable hash of project, type and normalized error: the same failure gets the same signature in every run'),
    sample_error: z.string().nullable().describe('the error text of the first occurrence'),
    first_seen: isoDate,
    last_seen: isoDate,
    count: z.number().int().describe('matching spans'),
    trace_count: z.number().int().describe('distinct traces with a matching span'),
    example_trace_ids: z.array(z.guid()).describe('the first five traces of the cluster'),
    last_notified_at: isoDate.nullable().describe('when failure.detected last fired for the cluster'),
    created_at: isoDate,
  })
  .describe('FailureCluster');
export type FailureCluster = z.infer<typeof failureCluster>;

const instant = z.iso.datetime({ offset: true });

export const listClustersQuery = z
  .object({
    ...pageQuery,
    from: instant.optional().describe('inclusive lower bound of last_seen'),
    to: instant.optional().describe('inclusive upper bound of last_seen; >= from'),
    type: z.string().min(1).max(100).optional(),
    project_id: z.guid().optional(),
    trace_id: z.guid().optional().describe('only the clusters this trace belongs to (a span of it matched); the trace detail links them'),
  })
  .superRefine(checkBounds);
export type ListClustersQuery = z.infer<typeof listClustersQuery>;

export const failureClusterList = z
  .object({ clusters: z.array(failureCluster), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('FailureClusterList');

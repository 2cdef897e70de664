import { z } from 'zod';
import { isoDate } from '../../platform/schemas.js';
import { GROUP_BYS, INTERVALS } from './repo.js';

export const MAX_BUCKETS = 1_440;
export const DEFAULT_GROUP_LIMIT = 20;
export const MAX_GROUP_LIMIT = 100;

const dateTime = z.iso.datetime({ offset: true });

export const metricsQuery = z.object({
  from: dateTime
    .optional()
    .describe('Start of the range (inclusive), rounded down to the interval. Default: `to` minus 24 hours.'),
  to: dateTime.optional().describe('End of the range (exclusive), rounded up to the interval. Default: now.'),
  interval: z.enum(INTERVALS).default('hour').describe(`Bucket width, UTC-aligned. At most ${MAX_BUCKETS} buckets per request.`),
  project_id: z.guid().optional().describe('Only traces of this project (404 when it is not a project of the tenant).'),
  group_by: z.enum(GROUP_BYS).optional().describe('One series per model, project or trace name; omitted: one series for all traces.'),
  group_limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_GROUP_LIMIT)
    .default(DEFAULT_GROUP_LIMIT)
    .describe('With group_by: at most this many series, the groups with the most traces in the range.'),
});
export type MetricsQuery = z.infer<typeof metricsQuery>;

const count = z.number().int().min(0);
const latency = z.number().nullable();

export const metricsPoint = z
  .object({
    timestamp: isoDate.describe('Start of the bucket (UTC).'),
    trace_count: count.describe('Traces that started in the bucket.'),
    error_count: count.describe('Of those, traces with an error.'),
    error_rate: z.number().min(0).max(1).describe('error_count / trace_count.'),
    latency_avg_ms: z.number().describe('Mean trace latency (exact).'),
    latency_p50_ms: latency.describe('Median trace latency, estimated within 1% (DDSketch).'),
    latency_p95_ms: latency.describe('95th percentile trace latency, estimated within 1% (DDSketch).'),
    latency_p99_ms: latency.describe('99th percentile trace latency, estimated within 1% (DDSketch).'),
    prompt_tokens: count,
    completion_tokens: count,
    total_tokens: count.describe('prompt_tokens + completion_tokens.'),
    cost: z.number().min(0).describe('Summed trace cost in USD.'),
  })
  .describe('MetricsPoint');
export type MetricsPoint = z.infer<typeof metricsPoint>;

export const metricsGroup = z
  .union([
    z.object({ model: z.string() }).strict(),
    z.object({ project_id: z.guid() }).strict(),
    z.object({ name: z.string() }).strict(),
  ])
  .nullable()
  .describe('The group of the series: {model}, {project_id} or {name}; null without group_by.');

export const metricsSeries = z
  .object({
    group: metricsGroup,
    points: z.array(metricsPoint).describe('One point per bucket that has traces, oldest first; empty buckets are omitted.'),
  })
  .describe('MetricsSeries');
export type MetricsSeries = z.infer<typeof metricsSeries>;

export const metricsResponse = z
  .object({
    interval: z.enum(INTERVALS),
    from: isoDate.describe('Effective start (aligned to the interval).'),
    to: isoDate.describe('Effective end, exclusive (aligned to the interval).'),
    group_by: z.enum(GROUP_BYS).nullable(),
    project_id: z.guid().nullable(),
    series: z.array(metricsSeries).describe('Without group_by exactly one series; with it, ordered by trace count, largest first.'),
    has_more_groups: z.boolean().describe('true when group_limit cut off further groups.'),
  })
  .describe('Metrics');
export type MetricsResponse = z.infer<typeof metricsResponse>;

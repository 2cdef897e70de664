import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate } from '../../platform/schemas.js';
import { checkBounds } from '../traces/schemas.js';
import { ANOMALY_METRICS, SEVERITIES } from './detector.js';

export const anomaly = z
  .object({
    id: z.guid(),
    project_id: z.guid(),
    metric: z.enum(ANOMALY_METRICS).describe('latency_p95 (ms), error_rate (0..1), cost (USD per window), tokens (per window)'),
    window_start: isoDate.describe('start of the 5-minute window (inclusive)'),
    window_end: isoDate.describe('end of the window (exclusive)'),
    observed: z.number().describe("the window's value"),
    expected: z.number().describe('median of the baseline windows'),
    score: z.number().describe('robust z-score: 0.6745 × (observed − expected) / MAD (floored)'),
    severity: z.enum(SEVERITIES).describe('warning: score ≥ 3.5; critical: score ≥ 6'),
    created_at: isoDate,
  })
  .describe('Anomaly');
export type Anomaly = z.infer<typeof anomaly>;

const instant = z.iso.datetime({ offset: true });

export const listAnomaliesQuery = z
  .object({
    ...pageQuery,
    from: instant.optional().describe('inclusive lower bound of window_start'),
    to: instant.optional().describe('inclusive upper bound of window_start; >= from'),
    project_id: z.guid().optional(),
    metric: z.enum(ANOMALY_METRICS).optional(),
    offset: z.coerce
      .number()
      .int()
      .min(0)
      .max(10_000)
      .optional()
      .describe('deprecated (see GET /v1/deprecations): rows to skip on a first page; continue with next_cursor'),
  })
  .superRefine(checkBounds)
  .refine((q) => q.offset === undefined || q.cursor === undefined, { message: 'offset cannot be combined with cursor', path: ['offset'] });
export type ListAnomaliesQuery = z.infer<typeof listAnomaliesQuery>;

export const anomalyList = z
  .object({ anomalies: z.array(anomaly), next_cursor: z.string().nullable(), has_more: z.boolean() })
  .describe('AnomalyList');

import { z } from 'zod';
import { PLAN_NAMES } from '../../platform/plans.js';
import { isoDate } from '../../platform/schemas.js';

const limit = z.number().int().nullable().describe('null: no limit on this plan');
const meter = z.object({ used: z.number().int(), limit });

export const billing = z
  .object({
    tenant_id: z.guid(),
    plan: z.enum(PLAN_NAMES),
    period: z.object({ start: isoDate, end: isoDate }).describe('the current UTC calendar month, end exclusive'),
    usage: z
      .object({
        traces: meter.describe('traces ingested this month'),
        evals: meter.describe('evaluations this month: POST /v1/eval, eval rules and dataset runs'),
        eval_rules: meter.describe('eval rules, enabled or not'),
        seats: meter.describe('members, active and invited (removed ones do not count)'),
      })
      .describe('counters kept in Postgres: they survive restarts of every store'),
    limits: z
      .object({
        traces_per_month: limit,
        evals_per_month: limit,
        eval_rules: limit,
        seats: limit,
        dataset_export_rows: limit,
        query_requests_per_minute: limit,
        default_requests_per_minute: limit,
        ingest_requests_per_minute: limit,
        otlp_export_spans_per_page: z.number().int(),
      })
      .describe("the plan's limits table"),
  })
  .describe('Billing: the plan, this month\'s usage against every quota, and the plan\'s limits');
export type Billing = z.infer<typeof billing>;

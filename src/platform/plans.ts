export const PLAN_NAMES = ['starter', 'pro', 'team', 'business', 'enterprise'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

/** `null` means no limit. Values marked "spec" come from api-v1.md; the rest are ours (docs/api-decisions.md). */
export interface PlanLimits {
  tracesPerMonth: number | null; // spec: starter, pro
  queryRequestsPerMinute: number | null; // spec: GET /v1/traces, /v1/metrics (60 rps, 600 rps)
  defaultRequestsPerMinute: number | null;
  ingestRequestsPerMinute: number | null;
  evalsPerMonth: number | null; // spec: starter, pro
  evalRules: number | null; // spec: starter
  seats: number | null; // spec: starter
  datasetExportRows: number | null; // spec: all
  otlpExportSpansPerPage: number; // spec: 10,000 for all
}

export const PLANS: Record<PlanName, PlanLimits> = {
  starter: {
    tracesPerMonth: 50_000,
    queryRequestsPerMinute: 60 * 60,
    defaultRequestsPerMinute: 1_200,
    ingestRequestsPerMinute: 6_000,
    evalsPerMonth: 2_500,
    evalRules: 3,
    seats: 3,
    datasetExportRows: 100,
    otlpExportSpansPerPage: 10_000,
  },
  pro: {
    tracesPerMonth: 1_000_000,
    queryRequestsPerMinute: 600 * 60,
    defaultRequestsPerMinute: 6_000,
    ingestRequestsPerMinute: 60_000,
    evalsPerMonth: 50_000,
    evalRules: null,
    seats: 10,
    datasetExportRows: 5_000,
    otlpExportSpansPerPage: 10_000,
  },
  team: {
    tracesPerMonth: 5_000_000,
    queryRequestsPerMinute: 1_200 * 60,
    defaultRequestsPerMinute: 12_000,
    ingestRequestsPerMinute: 120_000,
    evalsPerMonth: 250_000,
    evalRules: null,
    seats: 50,
    datasetExportRows: 5_000,
    otlpExportSpansPerPage: 10_000,
  },
  business: {
    tracesPerMonth: 20_000_000,
    queryRequestsPerMinute: 3_000 * 60,
    defaultRequestsPerMinute: 30_000,
    ingestRequestsPerMinute: 300_000,
    evalsPerMonth: 1_000_000,
    evalRules: null,
    seats: 200,
    datasetExportRows: 5_000,
    otlpExportSpansPerPage: 10_000,
  },
  enterprise: {
    tracesPerMonth: null,
    queryRequestsPerMinute: null,
    defaultRequestsPerMinute: null,
    ingestRequestsPerMinute: null,
    evalsPerMonth: null,
    evalRules: null,
    seats: null,
    datasetExportRows: null,
    otlpExportSpansPerPage: 10_000,
  },
};

export const planRank = (plan: PlanName): number => PLAN_NAMES.indexOf(plan);
export const planAtLeast = (plan: PlanName, required: PlanName): boolean => planRank(plan) >= planRank(required);

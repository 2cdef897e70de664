import { PLANS } from '../../platform/plans.js';
import type { EvalRuleService, EvalService } from '../evals/service.js';
import type { TraceRegistry } from '../ingest/service.js';
import type { MeService } from '../me/service.js';
import type { TenantService } from '../tenants/service.js';
import type { Billing } from './schemas.js';

/** The plan and the month's usage against each of its quotas, from the modules that count them. */
export class BillingService {
  constructor(
    private readonly tenants: Pick<TenantService, 'get'>,
    private readonly traces: Pick<TraceRegistry, 'monthUsage'>,
    private readonly evals: Pick<EvalService, 'monthUsage'>,
    private readonly evalRules: Pick<EvalRuleService, 'count'>,
    private readonly users: Pick<MeService, 'seats'>,
  ) {}

  async get(tenantId: string, now = new Date()): Promise<Billing> {
    const [tenant, traces, evals, rules, seats] = await Promise.all([
      this.tenants.get(tenantId),
      this.traces.monthUsage(tenantId, now),
      this.evals.monthUsage(tenantId, now),
      this.evalRules.count(tenantId),
      this.users.seats(tenantId),
    ]);
    const p = PLANS[tenant.plan];
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
    return {
      tenant_id: tenantId,
      plan: tenant.plan,
      period: { start: start.toISOString(), end: end.toISOString() },
      usage: {
        traces: { used: traces, limit: p.tracesPerMonth },
        evals: { used: evals, limit: p.evalsPerMonth },
        eval_rules: { used: rules, limit: p.evalRules },
        seats: { used: seats, limit: p.seats },
      },
      limits: {
        traces_per_month: p.tracesPerMonth,
        evals_per_month: p.evalsPerMonth,
        eval_rules: p.evalRules,
        seats: p.seats,
        dataset_export_rows: p.datasetExportRows,
        query_requests_per_minute: p.queryRequestsPerMinute,
        default_requests_per_minute: p.defaultRequestsPerMinute,
        ingest_requests_per_minute: p.ingestRequestsPerMinute,
        otlp_export_spans_per_page: p.otlpExportSpansPerPage,
      },
    };
  }
}

import type { TxSql } from '../../stores/pg.js';
import type { ClusterRecorder } from './cluster-service.js';
import { groupMatches } from './match.js';
import type { Candidate, FailureRuleRepository } from './repo.js';
import type { TraceService } from '../traces/service.js';

// Traces per pass: one span read per tenant of the pass, all in one transaction with the clusters.
const CANDIDATES_PER_PASS = 200;
const MAX_PASSES = 25;

export interface DetectionResult {
  candidates: number;
  clusters_grown: number;
}

/**
 * Failure detection, off the request path: the registry writes every newly stored trace of a
 * tenant with enabled failure rules to `failure_candidates` (the triggers
 * queue_readable_traces_for_rules_on_insert/_on_update on trace_registry, sql/009_failures.sql,
 * named in sql/024_trigger_names.sql); this drains
 * them, reads their spans, matches the tenant's rules and grows clusters in the transaction that
 * removes the candidates, so a crash between the two loses nothing and counts nothing twice.
 */
export class FailureDetector {
  constructor(
    private readonly repo: FailureRuleRepository,
    private readonly traces: Pick<TraceService, 'spanOutcomes'>,
    private readonly clusters: Pick<ClusterRecorder, 'apply'>,
  ) {}

  async drain(): Promise<DetectionResult> {
    const total: DetectionResult = { candidates: 0, clusters_grown: 0 };
    for (let pass = 0; pass < MAX_PASSES; pass++) {
      const result = await this.repo.begin((tx) => this.pass(tx));
      total.candidates += result.candidates;
      total.clusters_grown += result.clusters_grown;
      if (result.candidates < CANDIDATES_PER_PASS) break;
    }
    return total;
  }

  private async pass(tx: TxSql): Promise<DetectionResult> {
    const candidates = await this.repo.claimCandidates(tx, CANDIDATES_PER_PASS);
    const result: DetectionResult = { candidates: candidates.length, clusters_grown: 0 };
    if (candidates.length === 0) return result;
    const byTenant = new Map<string, Candidate[]>();
    for (const c of candidates) byTenant.set(c.tenant_id, [...(byTenant.get(c.tenant_id) ?? []), c]);
    const rules = await this.repo.enabledRules([...byTenant.keys()], tx);
    // Tenants in id order and clusters in signature order: concurrent passes lock clusters in one
    // global order and cannot deadlock.
    for (const [tenantId, traces] of [...byTenant].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const tenantRules = rules.filter((r) => r.tenant_id === tenantId);
      // A rule disabled or deleted since the trace was stored: nothing to look for.
      const watched = traces.filter((c) => tenantRules.some((r) => r.project_id === null || r.project_id === c.project_id));
      if (watched.length === 0) continue;
      const spans = await this.traces.spanOutcomes(
        tenantId,
        [...new Set(watched.map((c) => c.project_id))],
        watched.map((c) => c.trace_id),
      );
      for (const group of groupMatches(spans, tenantRules)) {
        if ((await this.clusters.apply(tx, tenantId, group)).grew) result.clusters_grown += 1;
      }
    }
    await this.repo.dropCandidates(tx, candidates);
    return result;
  }
}

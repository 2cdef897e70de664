import { createHash } from 'node:crypto';
import { newId } from '../../platform/ids.js';
import type { TxSql } from '../../stores/pg.js';
import type { TraceService } from '../traces/service.js';
import type { TraceFilterQuery } from '../traces/schemas.js';
import type { NewEvaluation } from './repo.js';
import type { Candidate, EvalRuleRepository, RuleRow } from './rules-repo.js';
import type { EvalQueue, EvalService, QueuedEval } from './service.js';

const CANDIDATES_PER_PASS = 500;
const MAX_PASSES = 20;

/**
 * Whether a trace is in a rule's sample: a pure function of the trace id, so the same traces are
 * chosen on every run and by every rule with the same rate (their scores compare trace for trace).
 */
export function inSample(traceId: string, rate: number): boolean {
  if (rate >= 1) return true;
  if (rate <= 0) return false;
  const digest = createHash('sha256').update(traceId.toLowerCase()).digest();
  return digest.readUIntBE(0, 6) / 2 ** 48 < rate;
}

export interface DrainResult {
  candidates: number;
  evaluations: number;
  over_quota: number;
}

/**
 * Online evaluation: enabled rules score traces stored after they were enabled. The registry
 * writes each newly stored trace of a tenant with enabled rules to `eval_candidates`: the triggers
 * queue_readable_traces_for_rules_on_insert/_on_update on trace_registry (sql/009_failures.sql,
 * named in sql/024_trigger_names.sql; the table is sql/005_evals.sql's). This drains them, creating
 * each rule's evaluations in the transaction that removes the candidates, so a crash between the
 * two loses nothing and repeats nothing.
 */
export class OnlineEvaluator {
  constructor(
    private readonly repo: EvalRuleRepository,
    private readonly evals: Pick<EvalService, 'createPending' | 'tryReserve' | 'failOverQuota'>,
    private readonly traces: Pick<TraceService, 'matching'>,
    private readonly queue: EvalQueue,
  ) {}

  async drain(): Promise<DrainResult> {
    const total: DrainResult = { candidates: 0, evaluations: 0, over_quota: 0 };
    for (let pass = 0; pass < MAX_PASSES; pass++) {
      const { result, created } = await this.repo.begin((tx) => this.pass(tx));
      // After commit: a lost enqueue leaves the evaluation pending for the reconcile job.
      await this.queue.enqueue(created).catch(() => {});
      total.candidates += result.candidates;
      total.evaluations += result.evaluations;
      total.over_quota += result.over_quota;
      if (result.candidates < CANDIDATES_PER_PASS) break;
    }
    return total;
  }

  private async pass(tx: TxSql): Promise<{ result: DrainResult; created: QueuedEval[] }> {
    const candidates = await this.repo.claimCandidates(tx, CANDIDATES_PER_PASS);
    const result: DrainResult = { candidates: candidates.length, evaluations: 0, over_quota: 0 };
    const created: QueuedEval[] = [];
    if (candidates.length === 0) return { result, created };
    const rules = await this.repo.enabledRules([...new Set(candidates.map((c) => c.tenant_id))], tx);
    for (const rule of rules) {
      const chosen = await this.choose(rule, candidates.filter((c) => c.tenant_id === rule.tenant_id));
      const ids = await this.evals.createPending(chosen.map((c) => evaluationOf(rule, c)), tx);
      if (ids.length === 0) continue;
      if (await this.evals.tryReserve(rule.tenant_id, ids.length, tx)) {
        created.push(...ids.map((id) => ({ id, tenant_id: rule.tenant_id })));
        result.evaluations += ids.length;
      } else {
        // Visible rather than silently skipped: each trace the quota left unscored says so.
        await this.evals.failOverQuota(ids, tx);
        result.over_quota += ids.length;
      }
    }
    await this.repo.dropCandidates(tx, candidates);
    return { result, created };
  }

  private async choose(rule: RuleRow, candidates: readonly Candidate[]): Promise<Candidate[]> {
    const sampled = candidates.filter(
      (c) => (rule.project_id === null || c.project_id === rule.project_id) && inSample(c.trace_id, rule.sampling_rate),
    );
    if (sampled.length === 0 || Object.keys(rule.filter).length === 0) return sampled;
    const query: TraceFilterQuery = { ...(rule.filter as TraceFilterQuery), ...(rule.project_id ? { project_id: rule.project_id } : {}) };
    const matching = await this.traces.matching(rule.tenant_id, query, sampled.map((c) => c.trace_id));
    return sampled.filter((c) => matching.has(c.trace_id));
  }
}

function evaluationOf(rule: RuleRow, candidate: Candidate): NewEvaluation {
  return {
    id: newId(),
    tenant_id: rule.tenant_id,
    project_id: candidate.project_id,
    trace_id: candidate.trace_id,
    metric_name: rule.metric_name,
    config: rule.config,
    threshold: rule.threshold,
    rule_id: rule.id,
    eval_version_id: rule.current_version_id,
  };
}

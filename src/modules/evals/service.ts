import { z } from 'zod';
import { decodeCursor, filterFingerprint, toPage } from '../../platform/cursor.js';
import { AppError, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { PLAN_NAMES, PLANS, planRank } from '../../platform/plans.js';
import { toIso } from '../../platform/schemas.js';
import type { TxSql } from '../../stores/pg.js';
import type { TenantService } from '../tenants/service.js';
import type { TraceService } from '../traces/service.js';
import { DEFAULT_THRESHOLD, evalConfig } from './config.js';
import type { EvaluationRepository, EvaluationRow, NewEvaluation, WindowAggregate } from './repo.js';
import type { EvalRuleService } from './rule-service.js';
import type { CompareQuery, EvalComparison, EvalVersion, Evaluation, ItemScore, ListEvalsQuery, TriggerEval, WindowStats } from './schemas.js';
import { EMPTY_OUTCOME, type EvalScorer } from './scorer.js';

// The module's secondary services and helpers that other modules use: this file is its public face.
export type { EvalRuleService } from './rule-service.js';

// A pending evaluation this old has lost its job; a running one this old has lost its worker
// (a judge call is bounded by the provider time-out and retries, far below this).
const PENDING_GRACE_MS = 30_000;
const RUNNING_GRACE_MS = 5 * 60_000;

/** Told, in the transaction that finishes it, of a rule's fresh evaluation that did not pass (the control loop's triggers). */
export interface EvaluationObserver {
  freshEvaluationFailed(tx: TxSql, tenantId: string, evaluation: { projectId: string; traceId: string; ruleId: string }): Promise<void>;
}

/** A queued evaluation: its id and its tenant. */
export interface QueuedEval {
  id: string;
  tenant_id: string;
}

export interface EvalQueue {
  enqueue(evaluations: readonly QueuedEval[]): Promise<void>;
}

const listCursor = z.object({ c: z.iso.datetime(), i: z.guid() });

export class EvalService {
  constructor(
    private readonly repo: EvaluationRepository,
    private readonly rules: EvalRuleService,
    private readonly scorer: EvalScorer,
    private readonly traces: Pick<TraceService, 'projectOf'>,
    private readonly tenants: Pick<TenantService, 'get'>,
    private readonly queue: EvalQueue,
    private readonly observer: EvaluationObserver | null = null,
  ) {}

  /** POST /v1/eval: the evaluation is stored pending and counted, then queued. */
  async trigger(tenantId: string, body: TriggerEval): Promise<{ eval_id: string; status: 'pending' }> {
    const projectId = await this.traces.projectOf(tenantId, body.trace_id);
    await this.scorer.requireJudge(tenantId, body.config);
    const id = newId();
    await this.repo.begin(async (tx) => {
      await this.reserveQuota(tenantId, 1, tx);
      await this.repo.insertMany(
        [{ id, tenant_id: tenantId, project_id: projectId, trace_id: body.trace_id, metric_name: body.metric_name, config: body.config, threshold: DEFAULT_THRESHOLD }],
        tx,
      );
    });
    // Stored before queued: should Redis refuse, the reconcile job queues it within a minute.
    await this.queue.enqueue([{ id, tenant_id: tenantId }]).catch(() => {});
    return { eval_id: id, status: 'pending' };
  }

  async get(tenantId: string, id: string): Promise<Evaluation> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw notFound('evaluation');
    return toEvaluation(row);
  }

  async list(tenantId: string, query: ListEvalsQuery) {
    const fingerprint = filterFingerprint(query);
    const after = query.cursor ? decodeCursor(query.cursor, listCursor.extend({ f: z.literal(fingerprint) })) : null;
    const rows = await this.repo.list(tenantId, query, after ? { createdAt: new Date(after.c), id: after.i } : null);
    const page = toPage(rows, query.limit, (last) => ({ c: last.created_at.toISOString(), i: last.id, f: fingerprint }));
    return { evals: page.items.map(toEvaluation), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async compare(tenantId: string, q: CompareQuery): Promise<EvalComparison> {
    const [baseline, candidate] = await Promise.all([
      this.repo.window(tenantId, q.metric, q.project_id, q.baseline_from, q.baseline_to),
      this.repo.window(tenantId, q.metric, q.project_id, q.candidate_from, q.candidate_to),
    ]);
    const b = windowStats(baseline);
    const c = windowStats(candidate);
    const diff = (x: number | null, y: number | null) => (x === null || y === null ? null : y - x);
    return { metric: q.metric, baseline: b, candidate: c, delta: { avg_score: diff(b.avg_score, c.avg_score), pass_rate: diff(b.pass_rate, c.pass_rate) } };
  }

  /** Counts `n` evaluations against the tenant's monthly quota, or refuses them all with a 402. */
  async reserveQuota(tenantId: string, n: number, tx?: TxSql): Promise<void> {
    const { plan } = await this.tenants.get(tenantId);
    if (!(await this.repo.reserve(tenantId, n, PLANS[plan].evalsPerMonth, tx))) {
      const upgrade = PLAN_NAMES.find((p) => planRank(p) > planRank(plan) && exceeds(PLANS[p].evalsPerMonth, PLANS[plan].evalsPerMonth));
      throw new AppError(402, 'eval_quota_exceeded', `the monthly evaluation quota of ${PLANS[plan].evalsPerMonth} is spent`, upgrade ? { required_plan: upgrade } : {});
    }
  }

  async tryReserve(tenantId: string, n: number, tx?: TxSql): Promise<boolean> {
    const { plan } = await this.tenants.get(tenantId);
    return this.repo.reserve(tenantId, n, PLANS[plan].evalsPerMonth, tx);
  }

  /** Stores evaluations (an eval rule's) in the caller's transaction; returns the ids really created. */
  async createPending(rows: readonly NewEvaluation[], tx: TxSql): Promise<string[]> {
    return this.repo.insertMany(rows, tx);
  }

  /** Evaluations counted against the monthly quota in the month of `now` (billing). */
  async monthUsage(tenantId: string, now = new Date()): Promise<number> {
    return this.repo.monthCount(tenantId, now);
  }

  /** A rule's evaluations the monthly quota has no room for: failed, saying so. */
  async failOverQuota(ids: readonly string[], tx: TxSql): Promise<void> {
    await this.repo.failPending(ids, 'eval_quota_exceeded: the monthly evaluation quota is spent', tx);
  }

  async getVersion(tenantId: string, versionId: string): Promise<EvalVersion> {
    return this.rules.getVersion(tenantId, versionId);
  }

  /**
   * A remediation (5/6): every eval rule that scored the trace re-scores the action's output as an
   * evaluation with context `remediation`, pointing at the action and at the evaluation it is
   * compared with. Counted against the quota like any evaluation; returns the new evaluations' ids.
   */
  async rescoreRemediation(tenantId: string, remediation: { traceId: string; sourceActionId: string; output: string }): Promise<string[]> {
    const baselines = await this.repo.ruleBaselines(tenantId, remediation.traceId);
    if (baselines.length === 0) return [];
    const rows: NewEvaluation[] = baselines.map((b) => ({
      id: newId(),
      tenant_id: tenantId,
      project_id: b.project_id,
      trace_id: b.trace_id,
      metric_name: b.metric_name,
      config: b.config,
      threshold: b.threshold,
      rule_id: b.rule_id,
      eval_version_id: b.eval_version_id,
      context: 'remediation',
      source_action_id: remediation.sourceActionId,
      original_evaluation_id: b.id,
      scored_output: remediation.output,
    }));
    const ids = await this.repo.begin(async (tx) => {
      await this.reserveQuota(tenantId, rows.length, tx);
      return this.repo.insertMany(rows, tx);
    });
    await this.queue.enqueue(ids.map((id) => ({ id, tenant_id: tenantId }))).catch(() => {});
    return ids;
  }

  /**
   * Of `traceIds`, those whose scoring by eval rules is over (none waiting, none pending or
   * running): a remediation is judged against those scores, so it should not start before.
   */
  async scoringSettled(tenantId: string, traceIds: readonly string[]): Promise<string[]> {
    if (traceIds.length === 0) return [];
    const open = await this.repo.scoringOpen(tenantId, traceIds);
    return traceIds.filter((id) => !open.has(id));
  }

  /** Data-subject requests (src/modules/privacy): every evaluation of these traces, oldest first. */
  async forTraces(tenantId: string, traceIds: readonly string[]): Promise<Evaluation[]> {
    if (traceIds.length === 0) return [];
    return (await this.repo.ofTraces(tenantId, traceIds)).map(toEvaluation);
  }

  async countForTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return traceIds.length === 0 ? 0 : this.repo.countOfTraces(tenantId, traceIds);
  }

  /**
   * Data-subject erasure: the evaluations of these traces (their scores and reasoning) and their
   * eval-rules outbox rows. Idempotent; a job still holding one finds it gone and skips it.
   */
  async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return traceIds.length === 0 ? 0 : this.repo.eraseTraces(tenantId, traceIds);
  }

  /** The evaluations a control action caused (its re-scores), oldest first. */
  async ofAction(tenantId: string, sourceActionId: string): Promise<Evaluation[]> {
    const page = await this.list(tenantId, { source_action_id: sourceActionId, limit: 1000 });
    return page.evals.reverse();
  }

  /**
   * A dataset item scored by an eval version (datasets module), or a candidate output scored without
   * being stored (an A/B harness: `output`); provider failures are in `error`.
   */
  async scoreItem(
    tenantId: string,
    version: EvalVersion,
    item: { traceId: string; spanId: string | null; expected: string | null; output?: string },
  ): Promise<ItemScore> {
    const config = evalConfig.parse(version.config);
    const { judge_model: _model, ...score } = await this.scorer.score(tenantId, config, version.threshold, item);
    return score;
  }

  /** The `evals` job: scores one evaluation, unless another worker owns it or it is finished. */
  async process(evalId: string, lastAttempt: boolean): Promise<'scored' | 'skipped'> {
    const row = await this.repo.claim(evalId, new Date(Date.now() - RUNNING_GRACE_MS));
    if (!row) return 'skipped';
    try {
      const parsed = evalConfig.safeParse(row.config);
      const outcome = parsed.success
        ? await this.scorer.score(row.tenant_id, parsed.data, row.threshold, { traceId: row.trace_id, output: row.scored_output })
        : { ...EMPTY_OUTCOME, error: `invalid stored config: ${parsed.error.issues[0]?.message ?? 'unknown'}` };
      await this.repo.begin(async (tx) => {
        const finished = await this.repo.finish(evalId, outcome, tx);
        if (finished && this.observer && row.rule_id && row.context === 'fresh' && outcome.error === null && outcome.passed === false) {
          await this.observer.freshEvaluationFailed(tx, row.tenant_id, { projectId: row.project_id, traceId: row.trace_id, ruleId: row.rule_id });
        }
      });
      return 'scored';
    } catch (err) {
      if (lastAttempt) await this.repo.finish(evalId, { ...EMPTY_OUTCOME, error: `internal error: ${(err as Error).message}` }).catch(() => {});
      else await this.repo.release(evalId).catch(() => {});
      throw err;
    }
  }

  /** Queues again what lost its job (see PENDING_GRACE_MS); the claim makes a duplicate harmless. */
  async reconcile(): Promise<number> {
    const stranded = await this.repo.stranded(new Date(Date.now() - PENDING_GRACE_MS), new Date(Date.now() - RUNNING_GRACE_MS), 1_000);
    await this.queue.enqueue(stranded);
    return stranded.length;
  }
}

function windowStats(w: WindowAggregate): WindowStats {
  return {
    avg_score: w.count === 0 ? null : w.avg_score,
    count: w.count,
    pass_rate: w.count === 0 ? null : w.passed / w.count,
  };
}

const exceeds = (limit: number | null, than: number | null): boolean => limit === null || (than !== null && limit > than);



export function toEvaluation({ attempts: _attempts, ...row }: EvaluationRow): Evaluation {
  return { ...row, created_at: row.created_at.toISOString(), started_at: toIso(row.started_at), completed_at: toIso(row.completed_at) };
}

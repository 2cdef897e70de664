import { z } from 'zod';
import { decodeCursor, filterFingerprint, toPage } from '../../platform/cursor.js';
import { AppError, conflict, notFound } from '../../platform/errors.js';
import { toIso } from '../../platform/schemas.js';
import type { Evaluation } from '../evals/schemas.js';
import type { EvalService } from '../evals/service.js';
import type { ProjectService } from '../projects/service.js';
import type { ControlLoopDepthReader } from '../traces/types.js';
import type { TraceService } from '../traces/service.js';
import type { ActionRow, ControlActionRepository } from './actions-repo.js';
import { outputSimilarity, remediationDiff, type EmbedderSource } from './diff.js';
import type { ControlAction, ListActionsQuery, RemediationDiff } from './schemas.js';
import type { ControlQueue } from './trigger.js';

// The module's secondary services and helpers that other modules use: this file is its public face.
export type { ControlSignals } from './signals-service.js';

const listCursor = z.object({ c: z.iso.datetime(), i: z.guid() });
const WINDOW_DAYS = { '7d': 7, '30d': 30 } as const;

export function toAction(row: ActionRow): ControlAction {
  const { tenant_id: _t, step_index: _s, provider: _p, started_at: _st, settled_at: _se, ...rest } = row;
  return { ...rest, created_at: row.created_at.toISOString(), executed_at: toIso(row.executed_at), decided_at: toIso(row.decided_at) };
}

/** control_loop_depth of GET /v1/traces/{id}: executed retries of the trace, every policy, escalations excluded. */
export const controlLoopDepth = (repo: Pick<ControlActionRepository, 'executedRetries'>): ControlLoopDepthReader => ({
  depth: (tenantId, traceId) => repo.executedRetries(tenantId, traceId),
});

/** The dashboard's view of control actions: listing, approvals, diffs and the retry-cap metric. */
export class ControlActionService {
  constructor(
    private readonly repo: ControlActionRepository,
    private readonly evals: Pick<EvalService, 'ofAction' | 'get'>,
    private readonly traces: Pick<TraceService, 'get'>,
    private readonly embedders: EmbedderSource,
    private readonly projects: Pick<ProjectService, 'get'>,
    private readonly queue: ControlQueue,
  ) {}

  async list(tenantId: string, query: ListActionsQuery) {
    const fingerprint = filterFingerprint(query);
    const after = query.cursor ? decodeCursor(query.cursor, listCursor.extend({ f: z.literal(fingerprint) })) : null;
    const rows = await this.repo.list(tenantId, query, after ? { createdAt: new Date(after.c), id: after.i } : null);
    const page = toPage(rows, query.limit, (last) => ({ c: last.created_at.toISOString(), i: last.id, f: fingerprint }));
    return { actions: page.items.map(toAction), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async get(tenantId: string, id: string): Promise<ControlAction> {
    return toAction(await this.row(tenantId, id));
  }

  /**
   * An owner lets an action awaiting approval go ahead: a remediation is queued to run, an
   * escalation is acknowledged (someone has taken the trace over). Either ends in `approved`.
   */
  async decide(tenantId: string, id: string, decision: 'approved' | 'rejected', by: string): Promise<ControlAction> {
    const row = await this.repo.decide(tenantId, id, decision, by);
    if (!row) {
      const current = await this.row(tenantId, id);
      throw conflict('control.action_state', `the action is ${current.status}; only a pending_approval action can be approved or rejected`);
    }
    if (decision === 'approved' && row.type !== 'escalate') await this.queue.enqueue([row]).catch(() => {});
    return toAction(row);
  }

  /** Null while the remediation or its re-scores are still running (the route answers 202). */
  async diff(tenantId: string, id: string): Promise<RemediationDiff | null> {
    const action = await this.row(tenantId, id);
    if (action.type === 'escalate' || action.status === 'failed' || action.status === 'rejected') {
      throw new AppError(409, 'control.no_diff', `a ${action.status} ${action.type} action produced no output to compare`);
    }
    if (action.status !== 'executed' || action.metadata.rescored !== true) return null;
    const rescores = await this.evals.ofAction(tenantId, id);
    if (rescores.some((e) => e.status === 'pending' || e.status === 'running')) return null;
    const trace = await this.traces.get(tenantId, action.trace_id);
    const span = trace.spans.find((s) => s.id === action.span_id) ?? { completion_tokens: 0, latency_ms: 0, output: '' };
    const paired = await Promise.all(
      rescores.map(async (rescore) => ({ rescore, original: await this.original(tenantId, rescore) })),
    );
    const similarity = await outputSimilarity(this.embedders, tenantId, span.output, action.output ?? '');
    return remediationDiff(action, span, paired, similarity);
  }

  /**
   * Data-subject erasure (src/modules/privacy): every control action on these traces, with the
   * inputs and outputs it kept. Idempotent; a job still holding one finds it gone.
   */
  async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return traceIds.length === 0 ? 0 : this.repo.eraseTraces(tenantId, traceIds);
  }

  /** retry_cap_hit: distinct traces of the project escalated by the retry cap in the window. */
  async retryCapHits(tenantId: string, projectId: string, window: '7d' | '30d'): Promise<number> {
    await this.projects.get(tenantId, projectId);
    return this.repo.retryCapHits(tenantId, projectId, new Date(Date.now() - WINDOW_DAYS[window] * 86_400_000));
  }

  private async original(tenantId: string, rescore: Evaluation): Promise<Evaluation | null> {
    return rescore.original_evaluation_id ? this.evals.get(tenantId, rescore.original_evaluation_id).catch(() => null) : null;
  }

  private async row(tenantId: string, id: string): Promise<ActionRow> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw notFound('control action');
    return row;
  }
}

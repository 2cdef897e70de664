import { z } from 'zod';
import { decodeCursor, filterFingerprint, toPage } from '../../platform/cursor.js';
import type { AuditEntry } from '../../platform/audit/chain.js';
import { AppError, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { toIso } from '../../platform/schemas.js';
import type { TxSql } from '../../stores/pg.js';
import type { EventSink } from '../webhooks/types.js';
import type { FailureService } from '../failures/service.js';
import type { AppLogger } from '../../platform/log.js';
import { restoresPrevious, SHIPS, TRANSITIONS, type Trigger } from './deployments.js';
import type { DeploymentPatch, DeploymentRepository, DeploymentRow } from './deployments-repo.js';
import type { PromptService } from './service.js';
import type { CreateDeployment, ListDeploymentsQuery, PromptDeployment } from './schemas.js';

const listCursor = z.object({ c: z.iso.datetime(), i: z.guid() });

/** Where automatic moves are recorded: the tenant's audit chain (platform/audit/chain.ts). */
export type AuditSink = (tenantId: string, entry: AuditEntry) => Promise<unknown>;
/** Where new deployments are handed for their proposal and A/B test (the `prompts` queue). */
export type DeploymentQueue = (tenantId: string, deploymentId: string) => Promise<void>;

/** Who moves a deployment: an owner (request path, audited by the route) or a system actor (audited here). */
export interface Actor {
  id: string;
  system: boolean;
}

export function toDeployment(row: DeploymentRow): PromptDeployment {
  const { lease_until: _l, from_version_id: _f, to_version_id: _t, monitor_samples: _m, ...rest } = row;
  return {
    ...rest,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    shipped_at: toIso(row.shipped_at),
    rolled_back_at: toIso(row.rolled_back_at),
  };
}

/** The failure cluster of `signature` in the project, looked up through the failures module's listing. */
export async function findCluster(failures: Pick<FailureService, 'listClusters'>, tenantId: string, projectId: string, signature: string) {
  let cursor: string | undefined;
  for (;;) {
    const page = await failures.listClusters(tenantId, { project_id: projectId, limit: 1000, ...(cursor ? { cursor } : {}) });
    const found = page.clusters.find((c) => c.signature === signature);
    if (found || !page.next_cursor) return found;
    cursor = page.next_cursor;
  }
}

/**
 * Prompt deployments: creation, the owners' decisions, and `apply`, the one place a deployment
 * changes state. A move is a conditional UPDATE with its side effects (a new active version when
 * it ships, the previous one restored when it is rolled back) and its `prompt.deployment.changed`
 * event in one transaction; a system actor's move is then appended to the audit chain.
 */
export class PromptDeploymentService {
  constructor(
    private readonly repo: DeploymentRepository,
    private readonly prompts: Pick<PromptService, 'find' | 'repo'>,
    private readonly failures: Pick<FailureService, 'listClusters'>,
    private readonly events: EventSink,
    private readonly audit: AuditSink,
    private readonly queue: DeploymentQueue,
    private readonly log: AppLogger,
  ) {}

  async create(tenantId: string, body: CreateDeployment, requestedBy: Actor): Promise<PromptDeployment> {
    const prompt = await this.prompts.find(tenantId, body.project_id, body.prompt_name);
    if (!(await findCluster(this.failures, tenantId, body.project_id, body.cluster_signature))) throw notFound('failure cluster');
    const row = await this.propose(tenantId, body.project_id, prompt.id, body.cluster_signature, requestedBy);
    if (!row) throw new AppError(409, 'prompt_deployment.open_exists', `prompt ${body.prompt_name} already has an open deployment`);
    return toDeployment(row);
  }

  /** A new deployment in `proposed`, queued for its proposal; undefined when the prompt has an open one. */
  async propose(tenantId: string, projectId: string, promptId: string, signature: string, by: Actor): Promise<DeploymentRow | undefined> {
    const row = await this.repo.begin(async (tx) => {
      const active = await this.prompts.repo.findById(tenantId, promptId);
      if (!active) return undefined;
      const created = await this.repo.insert(tx, tenantId, {
        id: newId(),
        project_id: projectId,
        prompt_id: promptId,
        cluster_signature: signature,
        requested_by: by.id,
        current_prompt: active.active.content,
        from_version_id: active.active_version_id,
      });
      if (created) await this.emit(tx, created, null);
      return created;
    });
    if (!row) return undefined;
    if (by.system) await this.record(row, null, 'propose', by);
    // A lost enqueue is made up by the lifecycle pass, which re-queues stale proposals.
    await this.queue(tenantId, row.id).catch((err: unknown) => this.log.warn({ err, deployment: row.id }, 'prompt deployment not queued; the lifecycle pass will'));
    return row;
  }

  /**
   * Data-subject erasure (src/modules/privacy): the monitor forgets these traces (it kept their
   * ids only). Idempotent.
   */
  async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return traceIds.length === 0 ? 0 : this.repo.forgetTraces(tenantId, traceIds);
  }

  async list(tenantId: string, query: ListDeploymentsQuery) {
    const fingerprint = filterFingerprint(query);
    const after = query.cursor ? decodeCursor(query.cursor, listCursor.extend({ f: z.literal(fingerprint) })) : null;
    const rows = await this.repo.list(tenantId, query, after ? { createdAt: new Date(after.c), id: after.i } : null);
    const page = toPage(rows, query.limit, (last) => ({ c: last.created_at.toISOString(), i: last.id, f: fingerprint }));
    return { deployments: page.items.map(toDeployment), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async get(tenantId: string, id: string): Promise<PromptDeployment> {
    return toDeployment(await this.row(tenantId, id));
  }

  /** An owner's move (approve, reject, rollback): 409 when the table has no such move from the current state. */
  async decide(tenantId: string, id: string, trigger: Extract<Trigger, 'approve' | 'reject' | 'rollback'>, userId: string, reason?: string): Promise<PromptDeployment> {
    const current = await this.row(tenantId, id);
    const patch: DeploymentPatch = trigger === 'reject' ? { rejection_reason: reason ?? '' } : { approved_by: userId };
    const moved = await this.apply(current, trigger, { id: userId, system: false }, patch);
    if (!moved) {
      const now = await this.row(tenantId, id);
      throw new AppError(409, 'prompt_deployment.invalid_state', `the deployment is ${now.status}; ${trigger} is allowed from ${TRANSITIONS[trigger].from.join(', ')}`);
    }
    return toDeployment(moved);
  }

  /** Moves `d` by `trigger` unless it has moved on already (undefined). */
  async apply(d: DeploymentRow, trigger: Trigger, actor: Actor, patch: DeploymentPatch = {}): Promise<DeploymentRow | undefined> {
    const move = TRANSITIONS[trigger];
    const now = new Date();
    const effects: DeploymentPatch = {
      ...(SHIPS.includes(trigger) ? { shipped_at: now } : {}),
      ...(move.to === 'rolled_back' ? { rolled_back_at: now } : {}),
    };
    const moved = await this.repo.begin(async (tx) => {
      let row = await this.repo.move(tx, d.tenant_id, d.id, move.from, move.to, { ...effects, ...patch });
      if (!row) return undefined;
      if (SHIPS.includes(trigger)) row = await this.ship(tx, row, actor);
      if (restoresPrevious(trigger, d.status)) await this.restore(tx, row, actor);
      await this.emit(tx, row, d.status);
      return row;
    });
    if (moved && actor.system) await this.record(moved, d.status, trigger, actor);
    return moved;
  }

  /**
   * The proposed prompt becomes the prompt's next version, and the active one; the version it
   * replaces (the one a rollback restores) is whatever was active at that moment.
   */
  private async ship(tx: TxSql, row: DeploymentRow, actor: Actor): Promise<DeploymentRow> {
    const version = await this.prompts.repo.addVersion(tx, row.tenant_id, row.prompt_id, { id: newId(), content: row.proposed_prompt, created_by: `deployment:${row.id}` });
    const replaced = await this.prompts.repo.activate(tx, row.tenant_id, row.prompt_id, version.id, null, actor.id, newId());
    return (await this.repo.move(tx, row.tenant_id, row.id, [row.status], row.status, { to_version_id: version.id, from_version_id: replaced ?? row.from_version_id }))!;
  }

  /**
   * The version this deployment replaced is active again, unless another version has been
   * activated since (a person's newer version is theirs to keep; the history has both).
   */
  private async restore(tx: TxSql, row: DeploymentRow, actor: Actor): Promise<void> {
    if (!row.to_version_id) return;
    await this.prompts.repo.activate(tx, row.tenant_id, row.prompt_id, row.from_version_id, row.to_version_id, actor.id, newId());
  }

  private async emit(tx: TxSql, row: DeploymentRow, from: string | null): Promise<void> {
    await this.events.emit(
      row.tenant_id,
      { type: 'prompt.deployment.changed', project_id: row.project_id, data: { deployment_id: row.id, prompt_name: row.prompt_name, cluster_signature: row.cluster_signature, from_status: from, status: row.status } },
      tx,
    );
  }

  /** The change is committed; a failed append is logged rather than undoing it (as the request hook does). */
  private async record(row: DeploymentRow, from: string | null, trigger: string, actor: Actor): Promise<void> {
    try {
      await this.audit(row.tenant_id, {
        actorType: 'system',
        actorId: actor.id,
        action: `prompt_deployment.${trigger}`,
        resourceType: 'prompt_deployment',
        resourceId: row.id,
        requestId: null,
        details: { from_status: from, status: row.status, project_id: row.project_id, prompt_name: row.prompt_name },
      });
    } catch (err) {
      this.log.warn({ err, deployment: row.id, trigger }, 'audit append failed for a prompt deployment move');
    }
  }

  private async row(tenantId: string, id: string): Promise<DeploymentRow> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw notFound('prompt deployment');
    return row;
  }
}

import { z } from 'zod';
import { decodeCursor, filterFingerprint, toPage } from '../../platform/cursor.js';
import { notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { ProjectService } from '../projects/service.js';
import { toCluster, type ClusterRecorder, type FailureOccurrence } from './cluster-service.js';

export type { ClusterJoinObserver } from './cluster-service.js';
import type { ClusterRepository } from './clusters-repo.js';
import type { FailureRuleRepository, FailureRuleRow, RuleSettings } from './repo.js';
import type { CreateFailureRule, FailureCluster, FailureRule, ListClustersQuery, UpdateFailureRule } from './schemas.js';

const ruleCursor = z.object({ id: z.guid(), e: z.enum(['true', 'false', 'any']) });
const clusterCursor = z.object({ t: z.iso.datetime(), i: z.guid() });

export function toRule(row: FailureRuleRow): FailureRule {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    name: row.name,
    project_id: row.project_id,
    enabled: row.enabled,
    match: row.match,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** Failure rules (what counts as a failure) and the clusters detection groups failures into. */
export class FailureService {
  constructor(
    private readonly rules: FailureRuleRepository,
    private readonly clusters: ClusterRepository,
    private readonly recorder: Pick<ClusterRecorder, 'record'>,
    private readonly projects: Pick<ProjectService, 'get'>,
  ) {}

  async createRule(tenantId: string, body: CreateFailureRule): Promise<FailureRule> {
    if (body.project_id) await this.projects.get(tenantId, body.project_id);
    const settings: RuleSettings = { name: body.name, project_id: body.project_id ?? null, enabled: body.enabled ?? true, match: body.match };
    return toRule(await this.rules.insert(tenantId, newId(), settings));
  }

  async updateRule(tenantId: string, id: string, patch: UpdateFailureRule): Promise<FailureRule> {
    if (patch.project_id) await this.projects.get(tenantId, patch.project_id);
    const updated = await this.rules.update(tenantId, id, (current) => {
      const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
      return { ...current, ...defined } as RuleSettings;
    });
    if (!updated) throw notFound('failure rule');
    return toRule(updated);
  }

  async getRule(tenantId: string, id: string): Promise<FailureRule> {
    const row = await this.rules.find(tenantId, id);
    if (!row) throw notFound('failure rule');
    return toRule(row);
  }

  async listRules(tenantId: string, query: { limit: number; cursor?: string | undefined; enabled?: 'true' | 'false' | undefined }) {
    const scope = query.enabled ?? 'any';
    const after = query.cursor ? decodeCursor(query.cursor, ruleCursor.extend({ e: z.literal(scope) })) : null;
    const enabled = query.enabled === undefined ? undefined : query.enabled === 'true';
    const rows = await this.rules.list(tenantId, enabled, after?.id ?? null, query.limit);
    const page = toPage(rows, query.limit, (last) => ({ id: last.id, e: scope }));
    return { failure_rules: page.items.map(toRule), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  /** Deletes the rule; the clusters it fed stay (they describe failures that happened). */
  async removeRule(tenantId: string, id: string): Promise<void> {
    if (!(await this.rules.remove(tenantId, id))) throw notFound('failure rule');
  }

  async listClusters(tenantId: string, query: ListClustersQuery) {
    const fingerprint = filterFingerprint(query);
    const after = query.cursor ? decodeCursor(query.cursor, clusterCursor.extend({ f: z.literal(fingerprint) })) : null;
    const rows = await this.clusters.list(tenantId, query, after ? { lastSeen: new Date(after.t), id: after.i } : null);
    const page = toPage(rows, query.limit, (last) => ({ t: last.last_seen.toISOString(), i: last.id, f: fingerprint }));
    return { clusters: page.items.map(toCluster), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async getCluster(tenantId: string, id: string): Promise<FailureCluster> {
    const row = await this.clusters.find(tenantId, id);
    if (!row) throw notFound('failure cluster');
    return toCluster(row);
  }

  /**
   * Data-subject erasure (src/modules/privacy): these traces leave every failure cluster and the
   * detection outbox. Idempotent.
   */
  async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return traceIds.length === 0 ? 0 : this.clusters.removeTraces(tenantId, traceIds, true);
  }

  /**
   * Data retention (src/modules/retention): expired traces leave their clusters' memberships,
   * examples and the detection outbox; the clusters and their counts stay. Idempotent.
   */
  async expireTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return traceIds.length === 0 ? 0 : this.clusters.removeTraces(tenantId, traceIds, false);
  }

  /** See ClusterRecorder.record: a failure of any type from another pipeline, clustered and notified like detected ones. */
  async record(tenantId: string, occurrence: FailureOccurrence): Promise<FailureCluster> {
    return this.recorder.record(tenantId, occurrence);
  }
}

import { z } from 'zod';
import { decodeCursor, toPage } from '../../platform/cursor.js';
import { notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { EvalRuleService } from '../evals/service.js';
import type { ProjectService } from '../projects/service.js';
import type { ControlConfigRepository, PolicyRow, PolicySettings, RouteRow, RouteSettings } from './config-repo.js';
import type { CreatePolicy, CreateRoute, ModelRoute, Policy, UpdatePolicy, UpdateRoute } from './schemas.js';

const idCursor = z.object({ id: z.guid() });
const defined = <T extends object>(patch: T) => Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<T>;

export function toRoute(row: RouteRow): ModelRoute {
  const { tenant_id: _tenant, created_at, updated_at, ...rest } = row;
  return { ...rest, created_at: created_at.toISOString(), updated_at: updated_at.toISOString() };
}

export function toPolicy(row: PolicyRow): Policy {
  const { tenant_id: _tenant, active_since: _since, created_at, updated_at, ...rest } = row;
  return { ...rest, steps: rest.steps as Policy['steps'], created_at: created_at.toISOString(), updated_at: updated_at.toISOString() };
}

/** Model routes (a model and its ordered fallbacks) and remediation policies. */
export class ControlConfigService {
  constructor(
    private readonly repo: ControlConfigRepository,
    private readonly projects: Pick<ProjectService, 'get'>,
    private readonly evalRules: Pick<EvalRuleService, 'get'>,
  ) {}

  async createRoute(tenantId: string, body: CreateRoute): Promise<ModelRoute> {
    if (body.project_id) await this.projects.get(tenantId, body.project_id);
    return toRoute(await this.repo.insertRoute(tenantId, newId(), { ...body, project_id: body.project_id ?? null, fallbacks: body.fallbacks ?? [] }));
  }

  async updateRoute(tenantId: string, id: string, patch: UpdateRoute): Promise<ModelRoute> {
    if (patch.project_id) await this.projects.get(tenantId, patch.project_id);
    const current = await this.repo.findRoute(tenantId, id);
    if (!current) throw notFound('model route');
    const updated = await this.repo.updateRoute(tenantId, id, { ...current, ...defined(patch) } as RouteSettings);
    if (!updated) throw notFound('model route');
    return toRoute(updated);
  }

  async getRoute(tenantId: string, id: string): Promise<ModelRoute> {
    const row = await this.repo.findRoute(tenantId, id);
    if (!row) throw notFound('model route');
    return toRoute(row);
  }

  async listRoutes(tenantId: string, query: { limit: number; cursor?: string | undefined }) {
    const page = await this.page(query, (after) => this.repo.listRoutes(tenantId, after, query.limit));
    return { model_routes: page.items.map(toRoute), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async removeRoute(tenantId: string, id: string): Promise<void> {
    if (!(await this.repo.removeRoute(tenantId, id))) throw notFound('model route');
  }

  async createPolicy(tenantId: string, body: CreatePolicy): Promise<Policy> {
    const settings: PolicySettings = {
      ...body,
      enabled: body.enabled ?? true,
      max_retry_depth: body.max_retry_depth ?? 3,
      max_cascade_depth: body.max_cascade_depth ?? 5,
      require_approval: body.require_approval ?? false,
    };
    await this.checkReferences(tenantId, settings);
    return toPolicy(await this.repo.insertPolicy(tenantId, newId(), settings));
  }

  async updatePolicy(tenantId: string, id: string, patch: UpdatePolicy): Promise<Policy> {
    const current = await this.repo.findPolicy(tenantId, id);
    if (!current) throw notFound('policy');
    const settings = { ...current, ...defined(patch) } as PolicySettings;
    await this.checkReferences(tenantId, settings);
    const updated = await this.repo.updatePolicy(tenantId, id, settings);
    if (!updated) throw notFound('policy');
    return toPolicy(updated);
  }

  async getPolicy(tenantId: string, id: string): Promise<Policy> {
    return toPolicy(await this.policyRow(tenantId, id));
  }

  /** The stored policy, for the control loop. */
  async policyRow(tenantId: string, id: string): Promise<PolicyRow> {
    const row = await this.repo.findPolicy(tenantId, id);
    if (!row) throw notFound('policy');
    return row;
  }

  /** The tenant's enabled policies (what a trigger signal is offered to). */
  async enabledPoliciesOf(tenantId: string): Promise<PolicyRow[]> {
    return this.repo.enabledPoliciesOf(tenantId);
  }

  async routeRow(tenantId: string, id: string): Promise<RouteRow | undefined> {
    return this.repo.findRoute(tenantId, id);
  }

  async listPolicies(tenantId: string, query: { limit: number; cursor?: string | undefined }) {
    const page = await this.page(query, (after) => this.repo.listPolicies(tenantId, after, query.limit));
    return { policies: page.items.map(toPolicy), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async removePolicy(tenantId: string, id: string): Promise<void> {
    if (!(await this.repo.removePolicy(tenantId, id))) throw notFound('policy');
  }

  private async page<R extends { id: string }>(query: { limit: number; cursor?: string | undefined }, fetch: (after: string | null) => Promise<R[]>) {
    const after = query.cursor ? decodeCursor(query.cursor, idCursor).id : null;
    return toPage(await fetch(after), query.limit, (last) => ({ id: last.id }));
  }

  /** Everything a policy names must be the tenant's: its project, eval rule and model routes (404 otherwise). */
  private async checkReferences(tenantId: string, s: PolicySettings): Promise<void> {
    await this.projects.get(tenantId, s.project_id);
    if (s.trigger.eval_rule_id) await this.evalRules.get(tenantId, s.trigger.eval_rule_id);
    for (const step of s.steps) if (step.type === 'fallback_model') await this.getRoute(tenantId, step.model_route_id);
  }
}

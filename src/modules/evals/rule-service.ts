import { decodeCursor, toPage } from '../../platform/cursor.js';
import { AppError, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { PLANS } from '../../platform/plans.js';
import type { ProjectService } from '../projects/service.js';
import type { TenantService } from '../tenants/service.js';
import { z } from 'zod';
import type { EvalScorer } from './scorer.js';
import type { EvalRuleRepository, RuleRow, RuleSettings, VersionRow } from './rules-repo.js';
import type { CreateRule, EvalRule, EvalVersion, UpdateRule } from './schemas.js';
import { DEFAULT_THRESHOLD } from './config.js';

const listCursor = z.object({ id: z.guid(), e: z.enum(['true', 'false', 'any']) });

/** Eval rules (online evaluation) and their immutable versions. */
export class EvalRuleService {
  constructor(
    private readonly repo: EvalRuleRepository,
    private readonly projects: Pick<ProjectService, 'get'>,
    private readonly tenants: Pick<TenantService, 'get'>,
    private readonly judges: Pick<EvalScorer, 'requireJudge'>,
  ) {}

  async create(tenantId: string, body: CreateRule): Promise<EvalRule> {
    if (body.project_id) await this.projects.get(tenantId, body.project_id);
    await this.judges.requireJudge(tenantId, body.config);
    const { plan } = await this.tenants.get(tenantId);
    const settings: RuleSettings = {
      name: body.name,
      metric_name: body.metric_name,
      project_id: body.project_id ?? null,
      filter: body.filter ?? {},
      sampling_rate: body.sampling_rate ?? 1,
      config: body.config,
      threshold: body.threshold ?? DEFAULT_THRESHOLD,
      min_score_drop: body.min_score_drop ?? 0,
      enabled: body.enabled ?? true,
    };
    const cap = PLANS[plan].evalRules;
    const created = await this.repo.create(tenantId, newId(), newId(), settings, cap);
    if (created === 'over_cap') {
      throw new AppError(402, 'eval_rules_quota_exceeded', `the ${plan} plan allows at most ${cap} eval rules`, { required_plan: 'pro' });
    }
    return toRule(created);
  }

  async update(tenantId: string, id: string, patch: UpdateRule): Promise<EvalRule> {
    if (patch.project_id) await this.projects.get(tenantId, patch.project_id);
    if (patch.config) await this.judges.requireJudge(tenantId, patch.config);
    const updated = await this.repo.update(tenantId, id, newId(), (current) => {
      const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
      return { ...current, ...defined } as RuleSettings;
    });
    if (!updated) throw notFound('eval rule');
    return toRule(updated);
  }

  async get(tenantId: string, id: string): Promise<EvalRule> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw notFound('eval rule');
    return toRule(row);
  }

  async list(tenantId: string, query: { limit: number; cursor?: string | undefined; enabled?: 'true' | 'false' | undefined }) {
    const scope = query.enabled ?? 'any';
    const after = query.cursor ? decodeCursor(query.cursor, listCursor.extend({ e: z.literal(scope) })) : null;
    const enabled = query.enabled === undefined ? undefined : query.enabled === 'true';
    const rows = await this.repo.list(tenantId, enabled, after?.id ?? null, query.limit);
    const page = toPage(rows, query.limit, (last) => ({ id: last.id, e: scope }));
    return { eval_rules: page.items.map(toRule), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  /** Rules of the tenant, enabled or not: what the plan's rule cap counts. */
  async count(tenantId: string): Promise<number> {
    return this.repo.count(tenantId);
  }

  /** Deletes the rule; its versions stay, so evaluations and dataset runs still show what scored them. */
  async remove(tenantId: string, id: string): Promise<void> {
    if (!(await this.repo.remove(tenantId, id))) throw notFound('eval rule');
  }

  async getVersion(tenantId: string, id: string): Promise<EvalVersion> {
    const row = await this.repo.findVersion(tenantId, id);
    if (!row) throw notFound('eval version');
    return toVersion(row);
  }
}

export const toRule = (row: RuleRow): EvalRule => ({ ...row, created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString() });

const toVersion = (row: VersionRow): EvalVersion => ({ ...row, created_at: row.created_at.toISOString() });

import { z } from 'zod';
import type { Authenticator } from '../../platform/auth.js';
import { decodeCursor, toPage } from '../../platform/cursor.js';
import { notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { PlanName } from '../../platform/plans.js';
import type { Sql } from '../../stores/pg.js';
import type { ApiKeyService } from '../apikeys/service.js';
import type { ProjectService } from '../projects/service.js';
import type { TenantRepository, TenantRow } from './repo.js';

export interface BootstrappedTenant {
  tenant_id: string;
  project_id: string;
  api_key: string;
}

export class TenantService {
  constructor(
    private readonly sql: Sql,
    private readonly repo: TenantRepository,
    private readonly projects: Pick<ProjectService, 'create'>,
    private readonly apiKeys: ApiKeyService,
    private readonly authenticator: Authenticator,
  ) {}

  /** A tenant with its first project and a full-access key, created together or not at all. */
  async create(name: string, plan: PlanName): Promise<BootstrappedTenant> {
    return this.sql.begin(async (tx) => {
      const tenant = await this.repo.insert(tx, newId(), name, plan);
      const project = await this.projects.create(tenant.id, 'Default', tx);
      const key = await this.apiKeys.create(tenant.id, { name: 'bootstrap', projectId: project.id }, null, tx);
      return { tenant_id: tenant.id, project_id: project.id, api_key: key.secret };
    });
  }

  async get(id: string): Promise<TenantRow> {
    const tenant = await this.repo.find(id);
    if (!tenant) throw notFound('tenant');
    return tenant;
  }

  /** Every tenant, newest first: the development sign-in's picker (never reachable in production). */
  async list(limit: number, cursor: string | undefined) {
    const before = cursor ? decodeCursor(cursor, z.object({ id: z.guid() })).id : undefined;
    const page = toPage(await this.repo.listNewest(limit, before), limit, (last) => ({ id: last.id }));
    return { tenants: page.items, has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async setPlan(id: string, plan: PlanName): Promise<TenantRow> {
    const tenant = await this.repo.setPlan(id, plan);
    if (!tenant) throw notFound('tenant');
    this.authenticator.forgetTenant(id);
    return tenant;
  }
}

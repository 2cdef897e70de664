import type { Authenticator } from '../../platform/auth.js';
import { notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { PlanName } from '../../platform/plans.js';
import type { Sql } from '../../stores/pg.js';
import type { ApiKeyService } from '../apikeys/service.js';
import type { ProjectRepository } from '../projects/repo.js';
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
    private readonly projects: ProjectRepository,
    private readonly apiKeys: ApiKeyService,
    private readonly authenticator: Authenticator,
  ) {}

  /** A tenant with its first project and a full-access key, created together or not at all. */
  async create(name: string, plan: PlanName): Promise<BootstrappedTenant> {
    return this.sql.begin(async (tx) => {
      const tenant = await this.repo.insert(tx, newId(), name, plan);
      const project = await this.projects.insert(tenant.id, newId(), 'Default', tx);
      const key = await this.apiKeys.create(tenant.id, { name: 'bootstrap', projectId: project.id }, null, tx);
      return { tenant_id: tenant.id, project_id: project.id, api_key: key.secret };
    });
  }

  async get(id: string): Promise<TenantRow> {
    const tenant = await this.repo.find(id);
    if (!tenant) throw notFound('tenant');
    return tenant;
  }

  async setPlan(id: string, plan: PlanName): Promise<TenantRow> {
    const tenant = await this.repo.setPlan(id, plan);
    if (!tenant) throw notFound('tenant');
    this.authenticator.forgetTenant(id);
    return tenant;
  }
}

import { notFound } from '../../platform/errors.js';
import type { TenantService } from '../tenants/service.js';
import type { UserRepository } from './repo.js';
import type { Me } from './schemas.js';

export class MeService {
  constructor(
    private readonly users: UserRepository,
    private readonly tenants: TenantService,
  ) {}

  /** Dashboard users of the tenant: the seats the plan counts. */
  async seats(tenantId: string): Promise<number> {
    return this.users.count(tenantId);
  }

  /** The signed-in dashboard user and their tenant. */
  async get(tenantId: string, userId: string): Promise<Me> {
    const [user, tenant] = await Promise.all([this.users.find(tenantId, userId), this.tenants.get(tenantId)]);
    if (!user) throw notFound('user');
    return {
      user: { id: user.id, email: user.email, first_name: user.given_name, last_name: user.family_name, role: user.role },
      tenant: { id: tenant.id, name: tenant.name, plan: tenant.plan },
    };
  }
}

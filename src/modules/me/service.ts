import type { MemberService } from '../members/service.js';
import type { TenantService } from '../tenants/service.js';
import type { Me } from './schemas.js';

export class MeService {
  constructor(
    private readonly members: Pick<MemberService, 'get' | 'seats'>,
    private readonly tenants: TenantService,
  ) {}

  /** Active and invited members of the tenant: the seats the plan counts. */
  async seats(tenantId: string): Promise<number> {
    return this.members.seats(tenantId);
  }

  /** The signed-in dashboard user and their tenant; their role is the stored one (members module). */
  async get(tenantId: string, userId: string): Promise<Me> {
    const [user, tenant] = await Promise.all([this.members.get(tenantId, userId), this.tenants.get(tenantId)]);
    return {
      user: { id: user.id, email: user.email, first_name: user.first_name, last_name: user.last_name, role: user.role },
      tenant: { id: tenant.id, name: tenant.name, plan: tenant.plan },
    };
  }
}

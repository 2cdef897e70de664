import type { Config } from '../../config.js';
import { mintDevSession } from '../../platform/dev-sessions.js';
import { AppError } from '../../platform/errors.js';
import type { TenantService } from '../tenants/service.js';
import type { DevSessionRequest } from './schemas.js';

/** How long a development session lasts: a working day, then the dashboard asks again. */
const DEV_SESSION_TTL_SECONDS = 8 * 60 * 60;

/** The routes are not registered where it is off; this guards the service itself, a 404 all the same. */
const devSignInOff = () =>
  new AppError(404, 'not_found', 'development sign-in is off (production, or sessions come from an identity provider)');

/** What the dashboard needs to sign a person in: the operator's identity provider, or outside production a development session. */
export class DashboardSignIn {
  constructor(
    private readonly auth: Config['auth'],
    private readonly tenants: TenantService,
  ) {}

  /** Outside production, where the server verifies HS256 sessions it can mint (config.auth.devSessions). */
  get devSignInOn(): boolean {
    return this.auth.devSessions;
  }

  settings() {
    const { oidc, devSessions } = this.auth;
    return {
      oidc: oidc ? { issuer: oidc.issuer, client_id: oidc.clientId, scopes: oidc.scopes } : null,
      dev_sign_in: devSessions,
    };
  }

  async devTenants(limit: number, cursor: string | undefined) {
    if (!this.auth.devSessions) throw devSignInOff();
    const page = await this.tenants.list(limit, cursor);
    return { ...page, tenants: page.tenants.map(({ id, name, plan }) => ({ id, name, plan })) };
  }

  async devSession(request: DevSessionRequest): Promise<{ token: string; expires_at: string }> {
    if (!this.auth.devSessions) throw devSignInOff();
    await this.tenants.get(request.tenant_id); // 404 for an unknown tenant, not a 401 at first use
    const expiresAt = Math.floor(Date.now() / 1000) + DEV_SESSION_TTL_SECONDS;
    const token = await mintDevSession(
      this.auth,
      { tenantId: request.tenant_id, role: request.role, sub: `dev-${request.role}`, email: request.email },
      expiresAt,
    );
    return { token, expires_at: new Date(expiresAt * 1000).toISOString() };
  }
}

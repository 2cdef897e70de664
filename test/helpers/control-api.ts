import type { App } from '../../src/app.js';
import type { PlanName } from '../../src/platform/plans.js';
import { create } from '../builders/resources.js';
import { bearer, createTenant, sessionToken, type TestTenant } from './app.js';

/** A tenant with owner and member dashboard sessions beside its API key. */
export interface Team extends TestTenant {
  owner: { authorization: string };
  member: { authorization: string };
}

/** Calls of the control-loop tests: tenants with sessions, requests answering {status, body}, creations that must succeed. */
export function controlApi(app: () => App) {
  async function call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: object, payload?: object) {
    const res = await app().inject({ method, url, headers: headers as Record<string, string>, ...(payload ? { payload } : {}) });
    return { status: res.statusCode, body: res.body ? res.json() : null };
  }
  return {
    call,
    async tenant(plan: PlanName = 'team'): Promise<Team> {
      const t = await createTenant(app(), plan);
      return { ...t, owner: bearer(await sessionToken(t.tenantId, 'owner')), member: bearer(await sessionToken(t.tenantId, 'member')) };
    },
    created: (url: string, t: Team, payload: object) => create(app(), url, t.owner, payload),
  };
}

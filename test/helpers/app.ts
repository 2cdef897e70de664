import './database.js';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { buildApp, type App, type AppDeps } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { PlanName } from '../../src/platform/plans.js';
import { openStores, type Stores } from '../../src/runtime.js';

export interface TestContext {
  app: App;
  stores: Stores;
  close(): Promise<void>;
}

// One embedded ClickHouse data directory per test process (chDB allows one per process).
const processDataDir = mkdtempSync(path.join(tmpdir(), `looptrace-test-${process.pid}-`));

export async function startApp(
  env: Record<string, string> = {},
  options: Pick<AppDeps, 'onRoute'> = {},
): Promise<TestContext> {
  // Every app is its own ingest writer: apps of parallel test files must not retire each other.
  const instance = `test-${process.pid}-${randomUUID()}`;
  const config = loadConfig({ ...process.env, LOOPTRACE_DATA_DIR: processDataDir, LOOPTRACE_INSTANCE_ID: instance, ...env });
  const stores = await openStores(config, { migrate: true });
  const app = await buildApp({ ...stores, logger: false, ...options });
  await app.ready();
  return {
    app,
    stores,
    async close() {
      await app.close();
      await stores.close();
    },
  };
}

export interface TestTenant {
  tenantId: string;
  projectId: string;
  apiKey: string;
  auth: { authorization: string };
}

let tenantCounter = 0;

/** A fresh tenant through the same path the CLI uses. */
export async function createTenant(app: App, plan: PlanName = 'pro'): Promise<TestTenant> {
  tenantCounter += 1;
  const t = await app.services.tenants.create(`test-${process.pid}-${tenantCounter}`, plan);
  return { tenantId: t.tenant_id, projectId: t.project_id, apiKey: t.api_key, auth: { authorization: `Bearer ${t.api_key}` } };
}

export async function sessionToken(
  tenantId: string,
  role: 'owner' | 'member' | 'viewer' = 'owner',
  overrides: { sub?: string; email?: string; expiresIn?: string | number; secret?: string } = {},
): Promise<string> {
  const secret = new TextEncoder().encode(overrides.secret ?? process.env.AUTH_JWT_SECRET!);
  return new SignJWT({
    tenant_id: tenantId,
    role,
    email: overrides.email ?? `${role}@example.test`,
    given_name: 'Test',
    family_name: role,
  })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(overrides.sub ?? `user-${role}-${tenantId}`)
    .setIssuedAt()
    .setExpirationTime(overrides.expiresIn ?? '1h')
    .sign(secret);
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

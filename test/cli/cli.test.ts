import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startApp, type TestContext } from '../helpers/app.js';

// The CLI runs from source as a real subprocess, the way a newcomer runs `npx tsx src/cli.ts`;
// `--import tsx` is the same loader without npx's start-up cost on every call.
const ROOT = path.resolve(import.meta.dirname, '../..');
// Its own data directory: the subprocess must never share this process's embedded ClickHouse.
const cliDataDir = mkdtempSync(path.join(tmpdir(), 'looptrace-cli-test-'));

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli.ts', ...args],
      { cwd: ROOT, env: { ...process.env, LOOPTRACE_DATA_DIR: cliDataDir, ...env }, timeout: 120_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

function jsonLine(result: CliResult): Record<string, unknown> {
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  const lines = result.stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

const MISSING_TENANT = '01900000-0000-7000-8000-000000000000';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

describe('looptrace CLI', () => {
  it('tenants create prints one JSON line whose api_key works against the API', async () => {
    const created = jsonLine(await cli(['tenants', 'create', '--name', 'Acme CLI', '--plan', 'pro']));
    expect(Object.keys(created).sort()).toEqual(['api_key', 'project_id', 'tenant_id']);
    expect(created.api_key).toMatch(/^lt_[A-Za-z0-9]{40}$/);

    const res = await ctx.app.inject({ method: 'GET', url: '/v1/projects', headers: bearer(String(created.api_key)) });
    expect(res.statusCode).toBe(200);
    expect(res.json().projects).toEqual([expect.objectContaining({ id: created.project_id, tenant_id: created.tenant_id })]);
    expect((await ctx.app.services.tenants.get(String(created.tenant_id))).plan).toBe('pro');
  });

  it('tenants set-plan changes the plan and records the change in the audit chain', async () => {
    const { tenant_id } = jsonLine(await cli(['tenants', 'create', '--name', 'Plan change', '--plan', 'starter']));
    const changed = jsonLine(await cli(['tenants', 'set-plan', '--tenant', String(tenant_id), '--plan', 'team']));
    expect(changed).toMatchObject({ tenant_id, plan: 'team' });
    expect((await ctx.app.services.tenants.get(String(tenant_id))).plan).toBe('team');

    const actions = await ctx.stores.sql<{ action: string; actor_type: string }[]>`
      select action, actor_type from audit_log where tenant_id = ${String(tenant_id)} order by seq`;
    expect(actions).toEqual([
      { action: 'tenant.create', actor_type: 'system' },
      { action: 'tenant.set_plan', actor_type: 'system' },
    ]);
  });

  it('keys create --scopes query makes a read-only key for the default project', async () => {
    const t = jsonLine(await cli(['tenants', 'create', '--name', 'Keys', '--plan', 'pro']));
    const key = jsonLine(await cli(['keys', 'create', '--tenant', String(t.tenant_id), '--name', 'reader', '--scopes', 'query']));
    expect(key).toMatchObject({ name: 'reader', scopes: ['query'], project_id: t.project_id });
    expect(key.secret).toMatch(/^lt_/);

    const auth = bearer(String(key.secret));
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/projects', headers: auth })).statusCode).toBe(200);
    const write = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: auth, payload: { name: 'nope' } });
    expect(write.statusCode).toBe(403);
    expect(write.json().code).toBe('scope_forbidden');
  });

  it('sessions mint signs a session token the server accepts, and refuses under AUTH_JWKS_URL', async () => {
    const t = jsonLine(await cli(['tenants', 'create', '--name', 'Sessions', '--plan', 'pro']));
    const minted = await cli(['sessions', 'mint', '--tenant', String(t.tenant_id), '--role', 'viewer', '--email', 'v@example.test']);
    expect(minted.code).toBe(0);
    const token = minted.stdout.trim();
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/apikeys', headers: bearer(token) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([expect.objectContaining({ name: 'bootstrap', project_id: t.project_id })]);

    const refused = await cli(['sessions', 'mint', '--tenant', String(t.tenant_id)], {
      AUTH_JWKS_URL: 'https://idp.example.test/.well-known/jwks.json',
    });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('AUTH_JWKS_URL');
  });

  it('answers bad arguments with usage on stderr and exit code 2, never a stack trace', async () => {
    const cases = [
      [],
      ['bogus'],
      ['tenants'],
      ['tenants', 'create', '--name', 'x'],
      ['tenants', 'create', '--name', 'x', '--plan', 'gold'],
      ['tenants', 'set-plan', '--tenant', MISSING_TENANT, '--plan', 'pro', '--force'],
      ['keys', 'create', '--tenant', 'not-a-uuid'],
      ['keys', 'create', '--tenant', MISSING_TENANT, '--scopes', 'write'],
      ['sessions', 'mint', '--tenant', MISSING_TENANT, '--ttl', 'forever'],
      ['sessions', 'mint', '--tenant', MISSING_TENANT, '--role', 'admin'],
    ];
    const results = await Promise.all(cases.map((args) => cli(args)));
    results.forEach((r, i) => {
      expect({ args: cases[i], code: r.code }).toEqual({ args: cases[i], code: 2 });
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('usage');
      expect(r.stderr).not.toMatch(/^\s+at /m);
    });
  });

  it('reports an unknown tenant as a one-line error with exit code 1', async () => {
    const r = await cli(['tenants', 'set-plan', '--tenant', MISSING_TENANT, '--plan', 'pro']);
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'looptrace: tenant not found\n' });
  });

  it('migrate applies pending migrations once and prints their names', async () => {
    const first = jsonLine(await cli(['migrate']));
    expect(Array.isArray(first.postgres) && Array.isArray(first.clickhouse)).toBe(true);
    // A fresh data directory means a fresh embedded ClickHouse: all its migrations run now.
    // (A shared ClickHouse server, CLICKHOUSE_URL, may have been migrated by another test file.)
    if (!process.env.CLICKHOUSE_URL) expect((first.clickhouse as string[]).length).toBeGreaterThan(0);
    expect(jsonLine(await cli(['migrate']))).toEqual({ postgres: [], clickhouse: [] });
  });
});

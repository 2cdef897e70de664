import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aTrace } from '../builders/traces.js';
import { bearer, sessionToken, startApp, type TestContext } from '../helpers/app.js';
import { freePort } from '../helpers/server-process.js';
import { WAIT, ensureWebBuilt, launchChromium, screenshot, seriousA11yViolations } from '../helpers/web.js';

/**
 * The development sign-in end to end (outside production, sessions signed with AUTH_JWT_SECRET),
 * the API's refusals shown as the API gives them, and the same server in production refusing it.
 */

let ctx: TestContext | undefined;
let appUrl: string;
let browser: Browser;
let page: Page;

async function listen(env: Record<string, string> = {}): Promise<TestContext> {
  const port = await freePort();
  const started = await startApp(env);
  await started.app.listen({ port, host: '127.0.0.1' });
  appUrl = `http://127.0.0.1:${port}`;
  return started;
}

async function signInForDevelopment(tenantId: string, role: string): Promise<void> {
  await page.goto(`${appUrl}/`);
  await page.waitForURL(/\/sign-in/, WAIT);
  await page.getByLabel('Tenant').selectOption(tenantId, WAIT);
  await page.getByLabel('Role').selectOption(role);
  await page.getByRole('button', { name: 'Sign in for development' }).click();
}

beforeAll(async () => {
  ensureWebBuilt();
  ctx = await listen();
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
});

afterAll(async () => {
  await browser?.close();
  await ctx?.close();
});

describe('development sign-in, outside production', () => {
  it('picks a tenant and a role, and the dashboard then acts as that role', async () => {
    const acme = await ctx!.app.services.tenants.create('Acme', 'starter');
    const trace = aTrace({ name: 'summarize ticket' });
    const ingested = await ctx!.app.inject({ method: 'POST', url: '/v1/ingest', headers: bearer(acme.api_key), payload: trace });
    expect(ingested.statusCode, ingested.body).toBe(201);

    await page.goto(`${appUrl}/sign-in`);
    await page.getByRole('heading', { name: 'Development sign-in' }).waitFor(WAIT);
    await page.getByLabel('Tenant').selectOption(acme.tenant_id, WAIT);
    expect(await page.getByLabel('Tenant').locator('option:checked').textContent()).toMatch(/^Acme \(Starter\) · /);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'sign-in');

    await signInForDevelopment(acme.tenant_id, 'viewer');
    await page.waitForURL(`${appUrl}/traces`, WAIT);
    await page.getByText('Acme · Starter plan').waitFor(WAIT);
    await page.getByText('Signed in · viewer').waitFor(WAIT);
    await page.locator('table.traces tbody tr', { hasText: 'summarize ticket' }).waitFor(WAIT);
    // What the plan does not allow is said ahead, from the API's own access policies.
    const control = page.locator('.nav-disabled', { hasText: 'Control loop' });
    expect(await control.getAttribute('aria-disabled')).toBe('true');
    expect(await control.textContent()).toContain('needs the Team plan or above (this tenant is on Starter)');
  });

  it('loads the other pages when first opened; one whose code cannot be fetched says so and the rest keep working', async () => {
    // The trace list came with the initial JS: the audit log's code is not in it.
    const auditChunk = page.waitForResponse((r) => /\/assets\/AuditLogPage-[\w-]+\.js$/.test(r.url()), WAIT);
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Audit log' }).click();
    expect((await auditChunk).status()).toBe(200);
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor(WAIT);

    // A release replaced the files while this tab stayed open: the members page's chunk is gone.
    await page.route(/\/assets\/MembersPage-[\w-]+\.js$/, (route) => route.fulfill({ status: 404, body: 'not found' }));
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Members and seats' }).click();
    const failure = page.getByRole('alert');
    await failure.getByText('This page could not be shown').waitFor(WAIT);
    expect(await failure.getByRole('button', { name: 'Reload the page' }).isVisible()).toBe(true);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Traces', exact: true }).click();
    await page.locator('table.traces tbody tr', { hasText: 'summarize ticket' }).waitFor(WAIT);
    expect(await page.getByRole('alert').count()).toBe(0);
    await page.unroute(/\/assets\/MembersPage-[\w-]+\.js$/);

    // A path the dashboard does not have: said so, with a way back.
    await page.goto(`${appUrl}/no-such-page`);
    await page.getByRole('heading', { level: 1, name: 'Page not found' }).waitFor(WAIT);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByRole('link', { name: 'Go to the traces' }).click();
    await page.waitForURL(`${appUrl}/traces`, WAIT);
  });

  it('signs out, saying so', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/sign-in/, WAIT);
    await page.getByText('Signed out.').waitFor(WAIT);
  });

  it("shows the API's 402 as an upgrade message: a Starter tenant whose three seats are taken", async () => {
    const full = await ctx!.app.services.tenants.create('Full house', 'starter');
    for (const sub of ['ann', 'bob', 'cy']) {
      const token = await sessionToken(full.tenant_id, 'member', { sub, email: `${sub}@example.test` });
      expect((await ctx!.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(token) })).statusCode).toBe(200);
    }
    await signInForDevelopment(full.tenant_id, 'owner');
    const notice = page.getByRole('alert');
    await notice.getByText('Upgrade needed.').waitFor(WAIT);
    expect(await notice.textContent()).toContain('The Pro plan or above allows this.');
    expect(await notice.textContent()).toContain('seats_quota_exceeded');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'upgrade-needed');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/sign-in/, WAIT);
  });
});

describe('development sign-in, in production', () => {
  beforeAll(async () => {
    await ctx?.close();
    ctx = undefined;
    ctx = await listen({ NODE_ENV: 'production' });
  });

  it('is neither offered nor accepted', async () => {
    await page.goto(`${appUrl}/sign-in`);
    await page.getByText('No sign-in is configured on this server').waitFor(WAIT);
    expect(await page.getByRole('heading', { name: 'Development sign-in' }).count()).toBe(0);

    const acme = await ctx!.app.services.tenants.create('Acme', 'pro');
    // Not registered in production: the same 404 as any unknown path, at the old /v1/ place too.
    for (const path of ['/auth/dev-session', '/v1/auth/dev-session']) {
      const refused = await fetch(`${appUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tenant_id: acme.tenant_id, role: 'owner' }),
      });
      expect(refused.status, path).toBe(404);
      expect(await refused.json()).toMatchObject({ code: 'not_found' });
    }
  });
});

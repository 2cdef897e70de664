import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestContext } from '../helpers/app.js';
import { freePort } from '../helpers/server-process.js';
import { ensureWebBuilt, launchChromium, seriousA11yViolations, WAIT, signInForDevelopment, openFromNav, checkPage } from '../helpers/web.js';

/**
 * The Administration pages (issue 11), signed in for development: API keys (the secret shown once),
 * LLM connections (the key never returned), members and seats (the API's 402 and 409 as it gives them), billing, projects and the audit log;
 * what a viewer may not do is disabled with the reason. Each page passes axe and is screenshotted.
 */

let ctx: TestContext;
let appUrl: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let tenantId: string;

const signIn = (role: 'owner' | 'member' | 'viewer') => signInForDevelopment(page, appUrl, tenantId, role);

async function signOut(): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/sign-in/, WAIT);
}

const open = (link: string, heading: string) => openFromNav(page, link, heading);

const check = (name?: string) => checkPage(page, name);

beforeAll(async () => {
  ensureWebBuilt();
  const port = await freePort();
  ctx = await startApp();
  await ctx.app.listen({ port, host: '127.0.0.1' });
  appUrl = `http://127.0.0.1:${port}`;
  // A Starter tenant: three seats, so the fourth invitation meets the API's 402.
  tenantId = (await ctx.app.services.tenants.create('Admin Co', 'starter')).tenant_id;
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: appUrl });
  page = await context.newPage();
});

afterAll(async () => {
  await browser?.close();
  await ctx?.close();
});

describe('administration as a viewer', () => {
  it('shows the controls disabled with the reason, and billing not offered', async () => {
    await signIn('viewer');
    const billing = page.locator('.nav-disabled', { hasText: 'Billing and usage' });
    expect(await billing.textContent()).toContain('needs the owner role (you are viewer)');

    await open('Members and seats', 'Members and seats');
    expect(await page.getByRole('button', { name: 'Invite' }).isDisabled()).toBe(true);
    await page.getByText('Inviting: needs the owner role (you are viewer).').waitFor(WAIT);
    await page.getByText('Changing roles and removing members: needs the owner role (you are viewer).').waitFor(WAIT);

    await open('API keys', 'API keys');
    expect(await page.getByRole('button', { name: 'Create key' }).isDisabled()).toBe(true);
    await page.getByText('Creating keys: needs the owner or member role (you are viewer).').waitFor(WAIT);
    expect(await seriousA11yViolations(page)).toEqual([]);

    await open('Projects', 'Projects');
    expect(await page.getByRole('button', { name: 'Create project' }).isDisabled()).toBe(true);

    await open('LLM connections', 'LLM connections');
    expect(await page.getByRole('button', { name: 'Add connection' }).isDisabled()).toBe(true);
    await page.getByText('Adding connections: needs the owner or member role (you are viewer).').waitFor(WAIT);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await signOut();
  });
});

describe('administration as an owner', () => {
  let secret = '';

  it('creates, archives and configures projects', async () => {
    await signIn('owner');
    await open('Projects', 'Projects');
    await page.getByRole('textbox', { name: 'Name' }).fill('Checkout bot');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByText('Created Checkout bot.').waitFor(WAIT);
    const row = page.locator('table.admin tbody tr', { hasText: 'Checkout bot' });
    await row.waitFor(WAIT);

    await row.getByLabel('Retention days of Checkout bot (empty: keep forever)').fill('30');
    await row.getByRole('button', { name: 'Save retention of Checkout bot' }).click();
    await row.getByRole('button', { name: 'Save retention of Checkout bot' }).and(page.locator(':disabled')).waitFor(WAIT);
    const autoship = row.getByRole('checkbox', { name: 'Prompt auto-ship for Checkout bot' });
    expect(await autoship.isChecked()).toBe(false);
    // Checked once the API has answered (the box shows what the API stored).
    await autoship.click();
    await row.locator('input[type=checkbox]:checked').waitFor(WAIT);
    await row.getByRole('button', { name: 'Archive Checkout bot' }).click();
    await row.getByRole('button', { name: 'Unarchive Checkout bot' }).waitFor(WAIT);

    const stored = (await ctx.app.services.projects.list(tenantId, 'all', 100, undefined)).projects.find((p: { name: string }) => p.name === 'Checkout bot');
    expect(stored).toMatchObject({ status: 'archived', retention_days: 30, prompt_autoship_enabled: true });
    await check('admin-projects');
  });

  it('creates an API key whose secret is shown once, works, and is revoked', async () => {
    await open('API keys', 'API keys');
    await page.getByRole('textbox', { name: 'Name' }).fill('CI ingest');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'Key “CI ingest” created' }).waitFor(WAIT);
    secret = (await page.locator('.secret-value code').textContent()) ?? '';
    expect(secret.length).toBeGreaterThan(20);

    await page.getByRole('button', { name: 'Copy secret' }).click();
    await page.getByRole('status').filter({ hasText: 'Copied to the clipboard.' }).waitFor(WAIT);
    // Runs in the page: its globals, not this process's.
    expect(await page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText())).toBe(secret);
    await page.locator('table.admin tbody tr', { hasText: 'CI ingest' }).waitFor(WAIT);
    await check('admin-api-keys');

    // The secret works against the API.
    const listed = await fetch(`${appUrl}/v1/projects`, { headers: { authorization: `Bearer ${secret}` } });
    expect(listed.status).toBe(200);

    // Never shown again: not after a reload, not after leaving and coming back.
    await page.reload();
    await page.locator('table.admin tbody tr', { hasText: 'CI ingest' }).waitFor(WAIT);
    expect(await page.content()).not.toContain(secret);
    await open('Traces', 'Traces');
    await open('API keys', 'API keys');
    await page.locator('table.admin tbody tr', { hasText: 'CI ingest' }).waitFor(WAIT);
    expect(await page.content()).not.toContain(secret);
    expect(await page.getByRole('heading', { name: 'Key “CI ingest” created' }).count()).toBe(0);

    // Revoke, confirming with the keyboard (the confirm button takes the focus).
    const row = page.locator('table.admin tbody tr', { hasText: 'CI ingest' });
    await row.getByRole('button', { name: 'Revoke CI ingest' }).focus();
    await page.keyboard.press('Enter');
    await row.getByRole('button', { name: 'Revoke now' }).waitFor(WAIT);
    expect(await row.getByRole('button', { name: 'Revoke now' }).evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    await row.getByText(/^revoked /).waitFor(WAIT);
    const refused = await fetch(`${appUrl}/v1/projects`, { headers: { authorization: `Bearer ${secret}` } });
    expect(refused.status).toBe(401);
  });

  it("invites members, and shows the API's 402 (seats) and 409 (last owner) as the API gives them", async () => {
    await open('Members and seats', 'Members and seats');
    // The viewer and this owner hold two of the three seats.
    await page.getByRole('textbox', { name: 'Email' }).fill('ann@example.test');
    await page.getByRole('combobox', { name: 'Role', exact: true }).selectOption('member');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByText('Invited ann@example.test as member.').waitFor(WAIT);
    await page.locator('table.admin tbody tr', { hasText: 'ann@example.test' }).getByText('invited').waitFor(WAIT);

    await page.getByRole('textbox', { name: 'Email' }).fill('bob@example.test');
    await page.getByRole('button', { name: 'Invite' }).click();
    const upgrade = page.getByRole('alert').filter({ hasText: 'Upgrade needed.' });
    await upgrade.waitFor(WAIT);
    expect(await upgrade.textContent()).toContain('seats_quota_exceeded');
    expect(await upgrade.textContent()).toContain('The Pro plan or above allows this.');

    // The only owner demoting themselves.
    const self = page.locator('table.admin tbody tr', { hasText: '(you)' });
    await self.getByRole('combobox').selectOption('member');
    await self.getByRole('button', { name: /^Change role/ }).click();
    const conflict = page.getByRole('alert').filter({ hasText: 'member.last_owner' });
    await conflict.waitFor(WAIT);
    expect(await conflict.textContent()).toMatch(/409/);

    // Cancelling the invitation frees its seat.
    const ann = page.locator('table.admin tbody tr', { hasText: 'ann@example.test' });
    await ann.getByRole('button', { name: 'Remove ann@example.test' }).click();
    await ann.getByRole('button', { name: 'Cancel the invitation' }).click();
    await ann.waitFor({ state: 'detached', ...WAIT });
    await page.getByRole('textbox', { name: 'Email' }).fill('cy@example.test');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByText('Invited cy@example.test as member.').waitFor(WAIT);
    await check('admin-members');
  });

  it('shows the plan, usage against its limits, and the limits table', async () => {
    await open('Billing and usage', 'Billing and usage');
    await page.getByText('Seats (active and invited members)').waitFor(WAIT);
    const seats = page.locator('.meters li', { hasText: 'Seats' });
    expect(await seats.textContent()).toContain('3 of 3 · limit reached');
    expect(await page.getByRole('meter', { name: 'Seats (active and invited members)' }).getAttribute('value')).toBe('3');
    await page.getByRole('rowheader', { name: 'Traces per month' }).waitFor(WAIT);
    await check('admin-billing');
  });

  it('adds an LLM connection whose key never comes back, and removes it', async () => {
    const key = 'sk-ant-e2e-0123456789-wxyz';
    // The page's own session token, so that no other person (and seat) appears.
    const token = await page.evaluate(() => (JSON.parse((globalThis as unknown as { localStorage: { getItem(k: string): string } }).localStorage.getItem('looptrace.session')) as { token: string }).token);
    const stored = async () => ((await (await fetch(`${appUrl}/v1/llm-connections`, { headers: { authorization: `Bearer ${token}` } })).json()) as { llm_connections: { name: string; provider: string; api_key_last4: string; default_model: string | null }[] }).llm_connections;

    await open('LLM connections', 'LLM connections');
    const form = page.getByRole('form', { name: 'Add an LLM connection' });
    await form.getByLabel(/^Provider/).selectOption('anthropic');
    await form.getByLabel('Name (optional)').fill('team anthropic');
    await form.getByLabel('API key').fill(key);
    await form.getByLabel('Default model (optional)').fill('claude-3-5-haiku');
    await form.getByRole('button', { name: 'Add connection' }).click();
    await page.getByText('Added team anthropic (key ending in wxyz).').waitFor(WAIT);
    const row = page.locator('table.admin tbody tr', { hasText: 'team anthropic' });
    await row.waitFor(WAIT);
    expect(await row.textContent()).toContain('••••wxyz');
    expect(await form.getByLabel('API key').inputValue()).toBe('');
    expect(await page.content()).not.toContain(key);
    expect(await stored()).toMatchObject([{ name: 'team anthropic', provider: 'anthropic', api_key_last4: 'wxyz', default_model: 'claude-3-5-haiku' }]);
    await check('admin-llm-connections');

    await row.getByRole('button', { name: 'Remove team anthropic' }).click();
    await row.getByRole('button', { name: 'Remove now' }).click();
    await row.waitFor({ state: 'detached', ...WAIT });
    expect(await stored()).toEqual([]);
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('lists the audit log, verifies its chain and shows the daily anchors', async () => {
    await open('Audit log', 'Audit log');
    await page.locator('table.audit tbody tr').first().waitFor(WAIT);
    expect(await page.locator('table.audit').textContent()).toContain('member');
    await page.getByRole('button', { name: 'Verify the chain' }).click();
    await page.getByRole('status').filter({ hasText: 'The chain holds:' }).waitFor(WAIT);
    await page.getByRole('heading', { name: /Daily anchors/ }).waitFor(WAIT);
    await page.locator('section[aria-labelledby="anchors-title"]').getByText(/No ended day yet|verified|missing/).first().waitFor(WAIT);
    await check('admin-audit-log');
  });
});

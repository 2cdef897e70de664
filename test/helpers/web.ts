import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import axe from 'axe-core';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SCREENSHOTS = path.join(ROOT, 'docs/screenshots');

/** web/dist, built when its sources changed (scripts/web-build.sh: one build at a time across test files). */
export function ensureWebBuilt(): void {
  execFileSync('bash', ['scripts/web-build.sh'], { cwd: ROOT, stdio: 'inherit' });
}

/** Debian's Chromium (scripts/test.sh installs it), headless, driven by playwright-core. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    // Root (CI, containers) cannot use Chromium's sandbox; the pages are our own, on loopback.
    args: ['--no-sandbox'],
  });
}

/** axe-core's serious and critical violations on the page as it is now, one line each. */
export async function seriousA11yViolations(page: Page): Promise<string[]> {
  // Evaluated over the DevTools protocol, so the page's own CSP (no inline scripts) stays in force.
  await page.evaluate(axe.source);
  const violations = await page.evaluate(async () => {
    // Runs in the page: its globals, not this process's.
    const page = globalThis as unknown as { axe: typeof axe; document: axe.ElementContext };
    const results = await page.axe.run(page.document, { resultTypes: ['violations'] });
    return results.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => String(n.target)) }));
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.targets.join(', ')})`);
}

/** A full-page screenshot for the README (docs/screenshots/NAME.png). */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/**
 * Console errors, uncaught exceptions and 4xx/5xx answers of the page, one line each, collected from
 * now on into the array returned (empty it, `problems.length = 0`, to start over).
 */
export function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()} ${m.location().url}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
  return problems;
}

/** How long a browser test waits for the page: generous, the machine may be busy. */
export const WAIT = { timeout: 30_000 };

/**
 * Signs in through the development sign-in as this tenant and role, signing out first when the
 * page already has a session, and waits until the shell says who is signed in.
 */
export async function signInForDevelopment(page: Page, appUrl: string, tenantId: string, role: 'owner' | 'member' | 'viewer'): Promise<void> {
  await page.goto(`${appUrl}/`);
  const signOut = page.getByRole('button', { name: 'Sign out' });
  await signOut.or(page.getByLabel('Tenant')).first().waitFor(WAIT);
  if (await signOut.isVisible()) await signOut.click();
  await page.waitForURL(/\/sign-in/, WAIT);
  await page.getByLabel('Tenant').selectOption(tenantId, WAIT);
  await page.getByLabel('Role').selectOption(role);
  await page.getByRole('button', { name: 'Sign in for development' }).click();
  await page.getByText(`Signed in · ${role}`).waitFor(WAIT);
}

/** Follows a link of the dashboard's navigation and waits for the page's heading. */
export async function openFromNav(page: Page, link: string, heading: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: link, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor(WAIT);
}

/** No serious or critical axe violation on the page as it is; then its screenshot, when named. */
export async function checkPage(page: Page, name?: string): Promise<void> {
  expect(await seriousA11yViolations(page)).toEqual([]);
  if (name) await screenshot(page, name);
}

import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import axe from 'axe-core';
import { chromium, type Browser, type Page } from 'playwright-core';

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

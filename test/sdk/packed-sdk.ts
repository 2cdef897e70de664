import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export type Sdk = typeof import('../../sdk/src/index.js');

const ROOT = path.resolve(import.meta.dirname, '../..');
const SDK = path.join(ROOT, 'sdk');

/**
 * @looptrace/sdk as a user gets it: compiled by tsc, packed by `npm pack`, installed from the
 * tarball into a scratch project under the system temp dir (offline: it has no dependencies),
 * with the repository's openai and @anthropic-ai/sdk linked in as the user's own. Built in its
 * own directory, so parallel test files and a developer's sdk/dist do not meet.
 */
export async function installPackedSdk(): Promise<{ sdk: Sdk; project: string; tarball: string; remove(): void }> {
  const work = mkdtempSync(path.join(tmpdir(), 'looptrace-sdk-'));
  const pkg = path.join(work, 'package');
  mkdirSync(pkg);
  for (const file of ['package.json', 'README.md']) if (existsSync(path.join(SDK, file))) copyFileSync(path.join(SDK, file), path.join(pkg, file));
  const tsc = [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', path.join(SDK, 'tsconfig.json'), '--outDir', path.join(pkg, 'dist')];
  try {
    execFileSync(process.execPath, tsc, { stdio: 'pipe', encoding: 'utf8' });
  } catch (err) {
    throw new Error(`tsc could not build sdk/:\n${(err as { stdout?: string }).stdout ?? String(err)}`, { cause: err });
  }
  const npm = (args: string[], cwd: string) => execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, encoding: 'utf8', stdio: 'pipe' });
  const packed = npm(['pack', '--ignore-scripts', '--pack-destination', work], pkg).trim().split('\n').at(-1)!;
  const tarball = path.join(work, packed);

  const project = path.join(work, 'app');
  mkdirSync(project);
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'scratch-app', private: true, type: 'module' }));
  npm(['install', '--offline', '--ignore-scripts', tarball], project);
  mkdirSync(path.join(project, 'node_modules/@anthropic-ai'), { recursive: true });
  symlinkSync(path.join(ROOT, 'node_modules/openai'), path.join(project, 'node_modules/openai'), 'dir');
  symlinkSync(path.join(ROOT, 'node_modules/@anthropic-ai/sdk'), path.join(project, 'node_modules/@anthropic-ai/sdk'), 'dir');
  // Imported through the package name from inside the project: its exports map, not a path into it.
  writeFileSync(path.join(project, 'sdk.mjs'), "export * from '@looptrace/sdk';\n");
  const sdk = (await import(pathToFileURL(path.join(project, 'sdk.mjs')).href)) as Sdk;
  return { sdk, project, tarball, remove: () => rmSync(work, { recursive: true, force: true }) };
}

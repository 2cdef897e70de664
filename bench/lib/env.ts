import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root and the bench folders. bench/.data is gitignored: every bench makes its own data there. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BENCH_DATA = path.join(ROOT, 'bench', '.data');
export const RESULTS_DIR = path.join(ROOT, 'bench', 'results');

/**
 * The stores a bench uses: its own Postgres database and Redis key prefix, so that a bench never
 * touches a developer's or the test suite's data. BENCH_DATABASE_URL / BENCH_REDIS_URL override.
 */
export function benchStores() {
  const fallback = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/looptrace');
  fallback.pathname = '/looptrace_bench';
  return {
    databaseUrl: process.env.BENCH_DATABASE_URL ?? fallback.toString(),
    redisUrl: process.env.BENCH_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    redisPrefix: 'looptrace-bench',
    /** Set to measure against a ClickHouse server instead of the embedded engine. */
    clickhouseUrl: process.env.CLICKHOUSE_URL || undefined,
  };
}

/** The environment of a Looptrace process (server or CLI) bound to one bench data directory. */
export function looptraceEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const stores = benchStores();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: stores.databaseUrl,
    REDIS_URL: stores.redisUrl,
    REDIS_PREFIX: stores.redisPrefix,
    LOOPTRACE_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ...extra,
  };
  if (!stores.clickhouseUrl) delete env.CLICKHOUSE_URL;
  return env;
}

/** What the numbers were measured on, written into every result file. */
export function machine() {
  let busy: string;
  try {
    // Other processes' CPU at the start of a run: benches on a shared machine say so.
    busy = execFileSync('ps', ['-eo', 'pcpu,comm', '--sort=-pcpu', '--no-headers'], { encoding: 'utf8' })
      .split('\n')
      .slice(0, 5)
      .map((l) => l.trim())
      .filter(Boolean)
      .join('; ');
  } catch {
    busy = 'unknown';
  }
  return {
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? 'unknown',
    mem_total_gib: +(totalmem() / 2 ** 30).toFixed(1),
    mem_free_gib: +(freemem() / 2 ** 30).toFixed(1),
    loadavg_1m_at_start: +loadavg()[0]!.toFixed(2),
    top_processes_at_start: busy,
    node: process.version,
  };
}

/**
 * The code a run measured: HEAD, and the files under src/ that differ from it (other engineers'
 * uncommitted work in a shared tree is part of what the server ran).
 */
export function gitState(): { commit: string; uncommitted_src_files: string[] } {
  const git = (args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    return {
      commit: git(['rev-parse', '--short', 'HEAD']).trim(),
      uncommitted_src_files: git(['status', '--porcelain', '--', 'src', 'clickhouse', 'sql'])
        .split('\n')
        .filter(Boolean)
        .map((l) => l.slice(3)),
    };
  } catch {
    return { commit: 'unknown', uncommitted_src_files: [] };
  }
}

/** Writes bench/results/<name>-<date>.json and returns its path. */
export function writeResult(name: string, result: object): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:]/g, '-').slice(0, 19);
  const file = path.join(RESULTS_DIR, `${name}-${stamp}.json`);
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  return file;
}

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, looptraceEnv } from './env.js';
import { memoryOf } from './proc.js';

/**
 * How a Looptrace entry point is run: from TypeScript through tsx (default: no build step, the
 * work tree as it is) or, with BENCH_RUNTIME=dist, the compiled `dist/` of `npm run build`.
 */
function entry(name: 'server' | 'cli', args: string[] = []): string[] {
  return process.env.BENCH_RUNTIME === 'dist'
    ? [path.join(ROOT, 'dist', `${name}.js`), ...args]
    : ['--import', 'tsx', path.join(ROOT, 'src', `${name}.ts`), ...args];
}

/** Runs the `looptrace` CLI against a bench data directory; returns its stdout parsed as JSON when it is. */
export async function looptraceCli(dataDir: string, args: string[]): Promise<unknown> {
  const { stdout } = await promisify(execFile)(process.execPath, entry('cli', args), {
    cwd: ROOT,
    env: looptraceEnv(dataDir),
    maxBuffer: 16 * 1024 * 1024,
  });
  const text = stdout.trim();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export interface BenchTenant {
  tenant_id: string;
  project_id: string;
  api_key: string;
}

/**
 * Migrates the bench stores and creates an enterprise tenant (no quota, no rate limit) through
 * the same CLI an operator uses. Runs before the server starts: migrate opens the embedded engine.
 */
export async function createBenchTenant(dataDir: string, name: string): Promise<BenchTenant> {
  await looptraceCli(dataDir, ['migrate']);
  return (await looptraceCli(dataDir, ['tenants', 'create', '--name', name, '--plan', 'enterprise'])) as BenchTenant;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

export interface RunningServer {
  url: string;
  pid: number;
  memory(): { rssMiB: number; peakRssMiB: number };
  /** SIGTERM, then waits for the graceful shutdown (drains HTTP, flushes batchers, closes stores). */
  stop(): Promise<void>;
}

/** Starts `src/server.ts` as a child process on a free loopback port and waits for /readyz. */
export async function startServer(dataDir: string, extraEnv: Record<string, string> = {}): Promise<RunningServer> {
  const port = await freePort();
  // BENCH_SERVER_NODE_ARGS: extra node options for the server, e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof'.
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, ...entry('server')], {
    cwd: ROOT,
    // No OTLP/gRPC unless a bench asks (OTLP_GRPC_PORT in extraEnv): runs side by side would share 4317.
    env: looptraceEnv(dataDir, { PORT: String(port), HOST: '127.0.0.1', OTLP_GRPC_PORT: '0', ...extraEnv }),
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = once(child, 'exit');
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with code ${child.exitCode} before it was ready`);
    try {
      const res = await fetch(`${url}/readyz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('server not ready within 120 s');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const pid = child.pid!;
  return {
    url,
    pid,
    memory: () => memoryOf(pid),
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 40_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

#!/usr/bin/env node
import { loadConfig } from './config.js';
import { AppError } from './platform/errors.js';
import { UsageError } from './cli/args.js';
import { auditCommand } from './cli/audit.js';
import { ciCommand } from './cli/ci.js';
import { dataDirCommand } from './cli/data-dir.js';
import { openCliContext, type CliCommand } from './cli/context.js';
import { keysCommand } from './cli/keys.js';
import { mcpCommand } from './cli/mcp.js';
import { migrateCommand } from './cli/migrate.js';
import { sessionsCommand } from './cli/sessions.js';
import { tenantsCommand } from './cli/tenants.js';

/** One entry per command: the module parses everything after the command name. */
const COMMANDS: Record<string, { run: CliCommand; synopsis: string; summary: string }> = {
  migrate: { run: migrateCommand, synopsis: 'migrate', summary: 'apply pending Postgres and ClickHouse migrations' },
  'data-dir': { run: dataDirCommand, synopsis: 'data-dir check', summary: 'check that LOOPTRACE_DATA_DIR and the Postgres database belong together' },
  tenants: { run: tenantsCommand, synopsis: 'tenants create|set-plan ...', summary: 'create a tenant (prints its first API key); change its plan' },
  keys: { run: keysCommand, synopsis: 'keys create --tenant ID ...', summary: 'create an API key (prints the secret once)' },
  sessions: { run: sessionsCommand, synopsis: 'sessions mint --tenant ID ...', summary: 'development session token for dashboard-only routes' },
  audit: { run: auditCommand, synopsis: 'audit anchor|verify ...', summary: 'sign daily audit-chain anchors; verify a tenant chain' },
};

/** Commands that talk to a running server over HTTP: they open no stores (a CI runner has none). */
const HTTP_COMMANDS: Record<string, { run: (args: string[]) => Promise<number>; synopsis: string; summary: string }> = {
  ci: { run: ciCommand, synopsis: 'ci gate --dataset ID ...', summary: 'run a CI gate on a server; exit 1 when the pass rate is below the bar' },
  mcp: { run: mcpCommand, synopsis: 'mcp [--url URL] [--api-key KEY]', summary: 'MCP server on stdio: read tools over traces, failures, evals, metrics' },
};

const USAGE = `usage: looptrace <command> [options]        (looptrace <command> --help for its options)

commands:
${[...Object.values(COMMANDS), ...Object.values(HTTP_COMMANDS)]
  .map((c) => `  ${c.synopsis.padEnd(32)} ${c.summary}`)
  .join('\n')}

The CLI reads the same environment as the server (DATABASE_URL, REDIS_URL, CLICKHOUSE_URL,
LOOPTRACE_DATA_DIR, AUTH_JWT_SECRET, ...); see README.md.`;

/** Known failure shapes get a sentence and a hint instead of a stack trace. */
function describeFailure(err: unknown): string {
  const e = err as { message?: string; code?: string };
  const message = e.message ?? String(err);
  if (err instanceof AppError) return message;
  // 3D000: no such database; 42P01: no such table. Both mean migrations have not run here yet.
  if (e.code === '3D000' || e.code === '42P01') {
    return `${message}: run \`looptrace migrate\` (or \`npm start\`) first, with the same DATABASE_URL`;
  }
  if (e.code === 'ECONNREFUSED' || e.code === 'ENOTFOUND') {
    return `${message}: is the store running and its URL right? (bash scripts/services.sh starts Postgres and Redis)`;
  }
  // chDB prints the real reason (usually "Cannot lock file": a running server owns the directory)
  // to stderr itself and throws only this generic error.
  if (e.code === 'CHDB_CONNECTION') {
    return `${message}: is a server running on this LOOPTRACE_DATA_DIR? Embedded ClickHouse has one owner: stop it, or set CLICKHOUSE_URL`;
  }
  return message;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? process.stderr : process.stdout).write(USAGE + '\n');
    return name === undefined ? 2 : 0;
  }
  const httpCommand = HTTP_COMMANDS[name];
  if (httpCommand) return httpCommand.run(args);
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`looptrace: unknown command "${name}"\n\n${USAGE}\n`);
    return 2;
  }
  const ctx = openCliContext(loadConfig());
  try {
    return await command.run(args, ctx);
  } finally {
    await ctx.stores.close();
  }
}

main(process.argv.slice(2))
  .catch((err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`looptrace: ${err.message}\n\n${err.usage}\n`);
      return 2;
    }
    process.stderr.write(`looptrace: ${describeFailure(err)}\n`);
    return 1;
  })
  .then((code) => {
    process.exitCode = code;
    // Stores are closed; if a library left a handle open, do not hang the shell on it.
    setTimeout(() => process.exit(code), 200).unref();
  });

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { z } from 'zod';
import { PLAN_NAMES, type PlanName } from '../platform/plans.js';

/** Bad command-line input: the dispatcher prints the message and `usage` on stderr and exits 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

/** node:util parseArgs in strict mode, with its errors turned into usage errors (never a stack trace). */
export function parseOptions<const T extends OptionSpecs>(args: string[], options: T, usage: string) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new UsageError((err as Error).message, usage);
  }
}

export const wantsHelp = (args: string[]): boolean => args.includes('--help') || args.includes('-h');

export function required(value: string | undefined, flag: string, usage: string): string {
  if (value === undefined || value.trim() === '') throw new UsageError(`missing required option --${flag}`, usage);
  return value.trim();
}

export function uuidOption(value: string | undefined, flag: string, usage: string): string {
  const v = required(value, flag, usage);
  if (!z.guid().safeParse(v).success) throw new UsageError(`--${flag} must be a UUID, got "${v}"`, usage);
  return v.toLowerCase();
}

export function planOption(value: string | undefined, usage: string): PlanName {
  const v = required(value, 'plan', usage);
  if (!(PLAN_NAMES as readonly string[]).includes(v)) {
    throw new UsageError(`--plan must be one of ${PLAN_NAMES.join('|')}, got "${v}"`, usage);
  }
  return v as PlanName;
}

/** Unknown or missing subcommand of a command group (`tenants`, `keys`, ...). */
export function unknownSubcommand(group: string, sub: string | undefined, usage: string): UsageError {
  return new UsageError(sub ? `unknown subcommand: ${group} ${sub}` : `missing subcommand for ${group}`, usage);
}

/** One JSON document per line on stdout: what scripts and tests parse. */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + '\n');
}

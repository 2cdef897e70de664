import { KNOWN_SCOPES } from '../modules/apikeys/schemas.js';
import { parseOptions, printJson, UsageError, unknownSubcommand, uuidOption, wantsHelp } from './args.js';
import { auditCliAction, type CliCommand } from './context.js';

export const KEYS_USAGE = `usage:
  looptrace keys create --tenant TENANT_ID [--name NAME] [--scopes SCOPES] [--project PROJECT_ID]
      Creates an API key. No --scopes = full access; --scopes query = read-only.
      --project sets the key's default ingest project (default: the tenant's first active project).
      Prints the key as JSON, with "secret" (shown only here).

SCOPES is a comma-separated list of: ${KNOWN_SCOPES.join(', ')}.`;

function parseScopes(values: string[] | undefined): (typeof KNOWN_SCOPES)[number][] | undefined {
  if (!values) return undefined;
  const scopes = values.flatMap((v) => v.split(',')).map((s) => s.trim()).filter((s) => s !== '');
  for (const scope of scopes) {
    if (!(KNOWN_SCOPES as readonly string[]).includes(scope)) {
      throw new UsageError(`unknown scope "${scope}" (known: ${KNOWN_SCOPES.join(', ')})`, KEYS_USAGE);
    }
  }
  return [...new Set(scopes)] as (typeof KNOWN_SCOPES)[number][];
}

export const keysCommand: CliCommand = async (args, ctx) => {
  const [sub, ...rest] = args;
  if (wantsHelp(args)) {
    console.log(KEYS_USAGE);
    return 0;
  }
  if (sub !== 'create') throw unknownSubcommand('keys', sub, KEYS_USAGE);
  const o = parseOptions(
    rest,
    {
      tenant: { type: 'string' },
      name: { type: 'string' },
      scopes: { type: 'string', multiple: true },
      project: { type: 'string' },
    },
    KEYS_USAGE,
  );
  const tenantId = uuidOption(o.tenant, 'tenant', KEYS_USAGE);
  const projectId = o.project === undefined ? undefined : uuidOption(o.project, 'project', KEYS_USAGE);
  const name = o.name?.trim() || 'cli';
  const scopes = parseScopes(o.scopes);
  await ctx.services.tenants.get(tenantId); // "tenant not found" rather than a confusing project error
  const key = await ctx.services.apiKeys.createForTenant(tenantId, { name, scopes, project_id: projectId }, null);
  await auditCliAction(ctx, tenantId, 'apikey.create', { type: 'apikey', id: key.id }, { name: key.name, scopes: key.scopes });
  printJson(key);
  return 0;
};

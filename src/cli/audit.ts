import { parseOptions, printJson, required, unknownSubcommand, UsageError, uuidOption, wantsHelp } from './args.js';
import type { CliCommand } from './context.js';
import { toAnchorView } from '../modules/audit/service.js';
import { utcDayStart } from '../platform/audit/anchor.js';

export const AUDIT_USAGE = `usage:
  looptrace audit anchor --date YYYY-MM-DD [--tenant TENANT_ID]
      Signs and stores the audit chain head of every tenant (or one) as of the end of that UTC day.
      Idempotent: an anchored day is printed as stored, never rewritten.
      Prints JSON {"date","anchors":[...],"failures":[...]}; exit code 1 when any tenant failed.
  looptrace audit verify --tenant TENANT_ID
      Recomputes the tenant's hash chain from genesis. Prints the verification as JSON;
      exit code 1 when the chain is broken.`;

function dayOption(value: string | undefined): string {
  const day = required(value, 'date', AUDIT_USAGE);
  try {
    utcDayStart(day);
  } catch {
    throw new UsageError(`--date must be a UTC day YYYY-MM-DD, got "${day}"`, AUDIT_USAGE);
  }
  return day;
}

export const auditCommand: CliCommand = async (args, ctx) => {
  const [sub, ...rest] = args;
  if (wantsHelp(args)) {
    console.log(AUDIT_USAGE);
    return 0;
  }
  switch (sub) {
    case 'anchor': {
      const o = parseOptions(rest, { date: { type: 'string' }, tenant: { type: 'string' } }, AUDIT_USAGE);
      const date = dayOption(o.date);
      const anchors = ctx.services.auditAnchors;
      if (o.tenant === undefined) {
        const run = await anchors.anchorDayForAllTenants(date);
        printJson({ date: run.date, anchors: run.anchors.map((a) => ({ tenant_id: a.tenant_id, ...toAnchorView(date, a) })), failures: run.failures });
        return run.failures.length > 0 ? 1 : 0;
      }
      const anchor = await anchors.anchor(uuidOption(o.tenant, 'tenant', AUDIT_USAGE), date);
      printJson({ date, anchors: [{ tenant_id: anchor.tenant_id, ...toAnchorView(date, anchor) }], failures: [] });
      return 0;
    }
    case 'verify': {
      const o = parseOptions(rest, { tenant: { type: 'string' } }, AUDIT_USAGE);
      const tenantId = uuidOption(o.tenant, 'tenant', AUDIT_USAGE);
      await ctx.services.tenants.get(tenantId); // "tenant not found" rather than an empty, valid chain
      const result = await ctx.services.audit.verifyChain(tenantId);
      printJson({ tenant_id: tenantId, ...result });
      return result.valid ? 0 : 1;
    }
    default:
      throw unknownSubcommand('audit', sub, AUDIT_USAGE);
  }
};

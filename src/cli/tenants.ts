import { parseOptions, planOption, printJson, required, unknownSubcommand, uuidOption, wantsHelp } from './args.js';
import { auditCliAction, type CliCommand } from './context.js';
import { PLAN_NAMES } from '../platform/plans.js';

export const TENANTS_USAGE = `usage:
  looptrace tenants create --name NAME --plan PLAN
      Creates a tenant with a "Default" project and a full-access API key.
      Prints one JSON line: {"tenant_id","project_id","api_key"} (the key is shown only here).
  looptrace tenants set-plan --tenant TENANT_ID --plan PLAN
      Prints the tenant as JSON.

PLAN is one of ${PLAN_NAMES.join('|')}.`;

export const tenantsCommand: CliCommand = async (args, ctx) => {
  const [sub, ...rest] = args;
  if (wantsHelp(args)) {
    console.log(TENANTS_USAGE);
    return 0;
  }
  switch (sub) {
    case 'create': {
      const o = parseOptions(rest, { name: { type: 'string' }, plan: { type: 'string' } }, TENANTS_USAGE);
      const name = required(o.name, 'name', TENANTS_USAGE);
      const plan = planOption(o.plan, TENANTS_USAGE);
      const created = await ctx.services.tenants.create(name, plan);
      await auditCliAction(ctx, created.tenant_id, 'tenant.create', { type: 'tenant', id: created.tenant_id }, { name, plan });
      printJson(created);
      return 0;
    }
    case 'set-plan': {
      const o = parseOptions(rest, { tenant: { type: 'string' }, plan: { type: 'string' } }, TENANTS_USAGE);
      const tenantId = uuidOption(o.tenant, 'tenant', TENANTS_USAGE);
      const plan = planOption(o.plan, TENANTS_USAGE);
      const before = await ctx.services.tenants.get(tenantId);
      const tenant = await ctx.services.tenants.setPlan(tenantId, plan);
      await auditCliAction(ctx, tenantId, 'tenant.set_plan', { type: 'tenant', id: tenantId }, { from: before.plan, to: plan });
      printJson({ tenant_id: tenant.id, name: tenant.name, plan: tenant.plan });
      return 0;
    }
    default:
      throw unknownSubcommand('tenants', sub, TENANTS_USAGE);
  }
};

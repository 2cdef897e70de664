import { mintDevSession } from '../platform/dev-sessions.js';
import { parseOptions, required, UsageError, unknownSubcommand, uuidOption, wantsHelp } from './args.js';
import type { CliCommand } from './context.js';

export const SESSIONS_USAGE = `usage:
  looptrace sessions mint --tenant TENANT_ID [--role owner|member|viewer] [--sub SUBJECT] [--email EMAIL] [--ttl 1h]
      Development helper: prints an HS256 session token (a JWT) signed with AUTH_JWT_SECRET, or with
      the dev secret the server keeps under LOOPTRACE_DATA_DIR, for dashboard-only routes:
        curl -H "Authorization: Bearer $(looptrace sessions mint --tenant ID)" localhost:8080/v1/apikeys
      Defaults: --role owner, --sub dev-<role>, --ttl 1h (units s, m, h, d, w).
      --role is the token's claim: it counts only at the first sign-in of --sub in the tenant (and not
      for an invited --email); afterwards the stored role wins (owners change it: PATCH /v1/members/ID).
      Refused when AUTH_JWKS_URL is set: sessions then come from your identity provider.`;

const ROLES = ['owner', 'member', 'viewer'] as const;
const TTL = /^(\d+)\s*(s|m|h|d|w)$/;

export const sessionsCommand: CliCommand = async (args, ctx) => {
  const [sub, ...rest] = args;
  if (wantsHelp(args)) {
    console.log(SESSIONS_USAGE);
    return 0;
  }
  if (sub !== 'mint') throw unknownSubcommand('sessions', sub, SESSIONS_USAGE);
  const o = parseOptions(
    rest,
    { tenant: { type: 'string' }, role: { type: 'string' }, sub: { type: 'string' }, email: { type: 'string' }, ttl: { type: 'string' } },
    SESSIONS_USAGE,
  );
  const tenantId = uuidOption(o.tenant, 'tenant', SESSIONS_USAGE);
  const role = ROLES.find((r) => r === (o.role ?? 'owner'));
  if (!role) {
    throw new UsageError(`--role must be one of ${ROLES.join('|')}, got "${o.role}"`, SESSIONS_USAGE);
  }
  const ttl = o.ttl ?? '1h';
  if (!TTL.test(ttl)) throw new UsageError(`--ttl must look like 30m, 1h or 7d, got "${ttl}"`, SESSIONS_USAGE);
  const subject = o.sub === undefined ? `dev-${role}` : required(o.sub, 'sub', SESSIONS_USAGE);

  const { auth } = ctx.stores.config;
  if (auth.jwksUrl) {
    process.stderr.write(
      'looptrace: AUTH_JWKS_URL is set, so the server only accepts session tokens from your identity provider; ' +
        'sessions mint signs HS256 development tokens and cannot make one it would accept.\n',
    );
    return 1;
  }
  if (!auth.jwtSecret) {
    process.stderr.write(
      'looptrace: no session secret: set AUTH_JWT_SECRET (outside production the server creates one under LOOPTRACE_DATA_DIR).\n',
    );
    return 1;
  }
  // A token for a tenant that does not exist would only fail later with a vaguer 401.
  await ctx.services.tenants.get(tenantId);

  // The bare token, so that TOKEN=$(looptrace sessions mint ...) just works.
  const token = await mintDevSession(auth, { tenantId, role, sub: subject, email: o.email }, ttl);
  process.stdout.write(token + '\n');
  return 0;
};

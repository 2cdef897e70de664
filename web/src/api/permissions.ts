import { ACCESS, AUTHOR_ONLY, FIELD_ROLES, FROM_STATES, PLANS, type AuthorOperation, type FieldOperation, type Operation, type StateOperation } from './access';
import type { Me, Plan } from './client';

/** A plan's place in the API's order (x-plans, lowest first). */
const planRank = (plan: Plan): number => PLANS.indexOf(plan);
const PLAN_NAME: Record<Plan, string> = { starter: 'Starter', pro: 'Pro', team: 'Team', business: 'Business', enterprise: 'Enterprise' };

export const planName = (plan: Plan): string => PLAN_NAME[plan];

export type Permission = { allowed: true } | { allowed: false; reason: string };

const needsRole = (roles: readonly string[], me: Me): Permission => ({ allowed: false, reason: `needs the ${roles.join(' or ')} role (you are ${me.user.role})` });

/**
 * Whether the signed-in person may call an operation, from the API's own declaration (x-access,
 * generated into access.ts). The API stays the authority; this only lets the page say why ahead.
 */
export function can(me: Me, operation: Operation): Permission {
  const policy: { public?: true; roles?: readonly string[]; plan?: Plan | null } = ACCESS[operation];
  if (policy.public) return { allowed: true };
  if (policy.roles && !policy.roles.includes(me.user.role)) return needsRole(policy.roles, me);
  if (policy.plan && planRank(me.tenant.plan) < planRank(policy.plan)) {
    return { allowed: false, reason: `needs the ${PLAN_NAME[policy.plan]} plan or above (this tenant is on ${PLAN_NAME[me.tenant.plan]})` };
  }
  return { allowed: true };
}

/** Whether an operation accepts a resource in `status`, from the API's own declaration (x-from-states, generated into access.ts). */
export const acceptsState = (operation: StateOperation, status: string): boolean => (FROM_STATES[operation] as readonly string[]).includes(status);

/** Whether the signed-in person may send `field` in an operation's body: its x-access, then its x-field-roles. */
export function canSend<O extends FieldOperation>(me: Me, operation: O, field: keyof (typeof FIELD_ROLES)[O]): Permission {
  const permission = can(me, operation);
  const fields: Readonly<Record<PropertyKey, readonly string[]>> = FIELD_ROLES[operation];
  const roles = fields[field];
  return !permission.allowed || roles.includes(me.user.role) ? permission : needsRole(roles, me);
}

const withArticle = (role: string) => `${/^[aeiou]/.test(role) ? 'an' : 'a'} ${role}`;

/** Whether the signed-in person may perform an author-only operation on `resource`: its x-access, then its x-author-only. */
export function canChange(me: Me, operation: AuthorOperation, resource: Record<string, unknown>): Permission {
  const permission = can(me, operation);
  const { field, or_roles }: { field: string; or_roles: readonly string[] } = AUTHOR_ONLY[operation];
  if (!permission.allowed || or_roles.includes(me.user.role) || resource[field] === me.user.id) return permission;
  return { allowed: false, reason: `only its author or ${or_roles.map(withArticle).join(' or ')} may change it` };
}

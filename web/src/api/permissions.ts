import { ACCESS, FROM_STATES, PLANS, type Operation, type StateOperation } from './access';
import type { Me, Plan } from './client';

/** A plan's place in the API's order (x-plans, lowest first). */
const planRank = (plan: Plan): number => PLANS.indexOf(plan);
const PLAN_NAME: Record<Plan, string> = { starter: 'Starter', pro: 'Pro', team: 'Team', business: 'Business', enterprise: 'Enterprise' };

export const planName = (plan: Plan): string => PLAN_NAME[plan];

export type Permission = { allowed: true } | { allowed: false; reason: string };

/**
 * Whether the signed-in person may call an operation, from the API's own declaration (x-access,
 * generated into access.ts). The API stays the authority; this only lets the page say why ahead.
 */
export function can(me: Me, operation: Operation): Permission {
  const policy: { public?: true; roles?: readonly string[]; plan?: Plan | null } = ACCESS[operation];
  if (policy.public) return { allowed: true };
  if (policy.roles && !policy.roles.includes(me.user.role)) {
    return { allowed: false, reason: `needs the ${policy.roles.join(' or ')} role (you are ${me.user.role})` };
  }
  if (policy.plan && planRank(me.tenant.plan) < planRank(policy.plan)) {
    return { allowed: false, reason: `needs the ${PLAN_NAME[policy.plan]} plan or above (this tenant is on ${PLAN_NAME[me.tenant.plan]})` };
  }
  return { allowed: true };
}

/** Whether an operation accepts a resource in `status`, from the API's own declaration (x-from-states, generated into access.ts). */
export const acceptsState = (operation: StateOperation, status: string): boolean => (FROM_STATES[operation] as readonly string[]).includes(status);

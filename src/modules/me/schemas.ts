import { z } from 'zod';
import { PLAN_NAMES } from '../../platform/plans.js';

export const me = z
  .object({
    user: z.object({
      id: z.guid(),
      email: z.string().nullable(),
      first_name: z.string().nullable(),
      last_name: z.string().nullable(),
      role: z.enum(['owner', 'member', 'viewer']),
    }),
    tenant: z.object({ id: z.guid(), name: z.string(), plan: z.enum(PLAN_NAMES) }),
  })
  .describe('Me');
export type Me = z.infer<typeof me>;

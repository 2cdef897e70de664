import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate } from '../../platform/schemas.js';

const role = z.enum(['owner', 'member', 'viewer']);

export const inviteMemberBody = z
  .object({
    // ASCII by the format's pattern, so always text Postgres can store.
    email: z.email().max(320).describe('matched case-insensitively against the email claim of a first sign-in'),
    role,
  })
  .strict();
export type InviteMember = z.infer<typeof inviteMemberBody>;

export const updateMemberBody = z.object({ role }).strict();
export type UpdateMember = z.infer<typeof updateMemberBody>;

export const member = z
  .object({
    id: z.guid().describe('the user id (`GET /v1/me`, `created_by` of what they made)'),
    email: z.string().nullable(),
    first_name: z.string().nullable(),
    last_name: z.string().nullable(),
    role,
    status: z.enum(['active', 'invited']).describe('invited: holds a seat; becomes active at its first sign-in'),
    invited_by: z.guid().nullable().describe('user id of the owner who invited them; null when provisioned at first sign-in'),
    created_at: isoDate,
    last_seen_at: isoDate.nullable().describe('last time one of their sessions was checked (at most every 30 s per token); null for an invitation'),
  })
  .describe('Member');
export type Member = z.infer<typeof member>;

export const listMembersQuery = z.object(pageQuery);
export type ListMembersQuery = z.infer<typeof listMembersQuery>;

export const memberList = z
  .object({ items: z.array(member), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('MemberList: active and invited members, oldest first');

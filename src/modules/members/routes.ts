import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ALL_ROLES, SESSION_ONLY, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { inviteMemberBody, listMembersQuery, member, memberList, updateMemberBody } from './schemas.js';

// Dashboard-only: API keys have no person behind them, and act as members besides.
const READ = { tokens: SESSION_ONLY, roles: ALL_ROLES, scope: 'read' } as const;
const ownerWrite = (audit: string) => ({ tokens: SESSION_ONLY, roles: ['owner'], scope: 'write', audit }) as const;
const tags = ['members'];

export const memberRoutes: FastifyPluginAsyncZod = async (app) => {
  const members = app.services.members;

  app.get('/v1/members', {
    config: { access: READ, errors: ['invalid_cursor'] },
    schema: { tags, summary: "The tenant's members, active and invited, oldest first", querystring: listMembersQuery, response: { 200: memberList } },
    handler: async (request) => members.list(requireAuth(request).tenantId, request.query),
  });

  app.post('/v1/members', {
    config: { access: ownerWrite('member.invite'), errors: ['member.already_exists', 'seats_quota_exceeded'] },
    schema: {
      tags,
      summary: 'Invite someone by email with a role; they take a seat now and join at their first sign-in',
      body: inviteMemberBody,
      response: { 201: member },
    },
    handler: async (request, reply) => {
      const created = await members.invite(requireAuth(request), request.body);
      // No email in the audit chain: it is append-only, and an email is personal data.
      request.auditResource = { type: 'member', id: created.id, details: { role: created.role } };
      return reply.status(201).send(created);
    },
  });

  app.patch('/v1/members/:id', {
    config: { access: ownerWrite('member.update'), errors: ['not_found', 'member.last_owner'] },
    schema: { tags, summary: "Change a member's role (takes effect within 30 s)", params: idParams, body: updateMemberBody, response: { 200: member } },
    handler: async (request) => {
      const updated = await members.updateRole(requireAuth(request).tenantId, request.params.id, request.body.role);
      request.auditResource = { type: 'member', id: updated.id, details: { role: updated.role } };
      return updated;
    },
  });

  app.delete('/v1/members/:id', {
    config: { access: ownerWrite('member.remove'), errors: ['not_found', 'member.last_owner'] },
    schema: { tags, summary: 'Remove a member or cancel an invitation (their sessions stop within 30 s)', params: idParams, response: { 204: z.null() } },
    handler: async (request, reply) => {
      const removed = await members.remove(requireAuth(request).tenantId, request.params.id);
      request.auditResource = { type: 'member', id: removed.id, details: { role: removed.role } };
      return reply.status(204).send(null);
    },
  });
};

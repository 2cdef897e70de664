import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { createProjectBody, listProjectsQuery, project, projectList, updateProjectBody } from './schemas.js';
import { RETENTION_ROLES } from './service.js';

export const projectRoutes: FastifyPluginAsyncZod = async (app) => {
  const projects = app.services.projects;
  const read = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' } as const;
  const write = (audit: string) => ({ tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', audit }) as const;

  app.post('/v1/projects', {
    config: { access: write('project.create') },
    schema: { tags: ['projects'], summary: 'Create a project', body: createProjectBody, response: { 201: project } },
    handler: async (request, reply) => {
      const created = await projects.create(requireAuth(request).tenantId, request.body.name);
      request.auditResource = { type: 'project', id: created.id, details: { name: created.name } };
      return reply.status(201).send(created);
    },
  });

  app.get('/v1/projects', {
    config: { access: read, errors: ['invalid_cursor'] },
    schema: { tags: ['projects'], summary: "The tenant's projects, by id", querystring: listProjectsQuery, response: { 200: projectList } },
    handler: async (request) => {
      const { status, limit, cursor } = request.query;
      return projects.list(requireAuth(request).tenantId, status, limit, cursor);
    },
  });

  app.get('/v1/projects/:id', {
    config: { access: read, errors: ['not_found'] },
    schema: { tags: ['projects'], summary: 'One project', params: idParams, response: { 200: project } },
    handler: async (request) => projects.get(requireAuth(request).tenantId, request.params.id),
  });

  app.patch('/v1/projects/:id', {
    config: { access: write('project.update'), errors: ['not_found', 'role_forbidden'], fieldRoles: { retention_days: RETENTION_ROLES } },
    schema: {
      tags: ['projects'],
      summary: 'Rename a project, change its prompt auto-ship setting or (owner only) its retention period',
      params: idParams,
      body: updateProjectBody,
      response: { 200: project },
    },
    handler: async (request) => {
      // The body names every field changed, retention_days (null included) among them.
      request.auditResource = { type: 'project', id: request.params.id, details: request.body };
      const auth = requireAuth(request);
      return projects.update(auth.tenantId, request.params.id, request.body, auth.role);
    },
  });

  app.post('/v1/projects/:id/archive', {
    config: { access: write('project.archive'), errors: ['not_found', 'error.project.cannot_archive_last'] },
    schema: {
      tags: ['projects'],
      summary: 'Archive a project: ingest into it is refused until it is unarchived',
      params: idParams,
      response: { 200: project },
    },
    handler: async (request) => projects.archive(requireAuth(request).tenantId, request.params.id),
  });

  app.post('/v1/projects/:id/unarchive', {
    config: { access: write('project.unarchive'), errors: ['not_found'] },
    schema: { tags: ['projects'], summary: 'Unarchive a project', params: idParams, response: { 200: project } },
    handler: async (request) => projects.unarchive(requireAuth(request).tenantId, request.params.id),
  });
};

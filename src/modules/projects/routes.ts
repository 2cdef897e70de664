import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { createProjectBody, listProjectsQuery, project, projectList, updateProjectBody } from './schemas.js';

export const projectRoutes: FastifyPluginAsyncZod = async (app) => {
  const projects = app.services.projects;
  const read = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' } as const;
  const write = (audit: string) => ({ tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', audit }) as const;

  app.post('/v1/projects', {
    config: { access: write('project.create') },
    schema: { tags: ['projects'], body: createProjectBody, response: { 201: project } },
    handler: async (request, reply) => {
      const created = await projects.create(requireAuth(request).tenantId, request.body.name);
      request.auditResource = { type: 'project', id: created.id, details: { name: created.name } };
      return reply.status(201).send(created);
    },
  });

  app.get('/v1/projects', {
    config: { access: read },
    schema: { tags: ['projects'], querystring: listProjectsQuery, response: { 200: projectList } },
    handler: async (request) => {
      const { status, limit, cursor } = request.query;
      return projects.list(requireAuth(request).tenantId, status, limit, cursor);
    },
  });

  app.get('/v1/projects/:id', {
    config: { access: read },
    schema: { tags: ['projects'], params: idParams, response: { 200: project } },
    handler: async (request) => projects.get(requireAuth(request).tenantId, request.params.id),
  });

  app.patch('/v1/projects/:id', {
    config: { access: write('project.update') },
    schema: { tags: ['projects'], params: idParams, body: updateProjectBody, response: { 200: project } },
    handler: async (request) => {
      request.auditResource = { type: 'project', id: request.params.id, details: request.body };
      return projects.update(requireAuth(request).tenantId, request.params.id, request.body);
    },
  });

  app.post('/v1/projects/:id/archive', {
    config: { access: write('project.archive') },
    schema: { tags: ['projects'], params: idParams, response: { 200: project } },
    handler: async (request) => projects.archive(requireAuth(request).tenantId, request.params.id),
  });

  app.post('/v1/projects/:id/unarchive', {
    config: { access: write('project.unarchive') },
    schema: { tags: ['projects'], params: idParams, response: { 200: project } },
    handler: async (request) => projects.unarchive(requireAuth(request).tenantId, request.params.id),
  });
};

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ANY_TOKEN, QUERY_READ, WRITERS, requireAuth } from '../../platform/access.js';
import type { AuthContext } from '../../platform/auth.js';
import { badRequest } from '../../platform/errors.js';
import {
  activePrompt,
  activeQuery,
  createPromptBody,
  createVersionBody,
  listPromptsQuery,
  nameParams,
  projectQuery,
  prompt,
  promptDetail,
  promptList,
} from './schemas.js';

// The registry is on every plan: SDKs of any tenant fetch their prompts. Deployments are Team+.
const write = (audit: string) => ({ tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', audit }) as const;
const tags = ['prompts'];

const authorOf = (auth: AuthContext) => (auth.userId ? `user:${auth.userId}` : `apikey:${auth.apiKeyId}`);

export const promptRoutes: FastifyPluginAsyncZod = async (app) => {
  const prompts = app.services.prompts;

  app.post('/v1/prompts', {
    config: { access: write('prompt.create'), errors: ['not_found', 'prompt.exists'] },
    schema: { tags, summary: 'Register a prompt; its first version is active', body: createPromptBody, response: { 201: prompt } },
    handler: async (request, reply) => {
      const auth = requireAuth(request);
      const created = await prompts.create(auth.tenantId, request.body, authorOf(auth));
      request.auditResource = { type: 'prompt', id: created.id, details: { name: created.name, version: created.active_version.version } };
      return reply.status(201).send(created);
    },
  });

  app.post('/v1/prompts/:name/versions', {
    config: { access: write('prompt.version.create'), errors: ['not_found'] },
    schema: { tags, summary: "Add a prompt's next version (active unless activate is false)", params: nameParams, body: createVersionBody, response: { 201: prompt } },
    handler: async (request, reply) => {
      const auth = requireAuth(request);
      const updated = await prompts.addVersion(auth.tenantId, request.params.name, request.body, authorOf(auth));
      request.auditResource = { type: 'prompt', id: updated.id, details: { name: updated.name, active_version: updated.active_version.version } };
      return reply.status(201).send(updated);
    },
  });

  app.get('/v1/prompts', {
    config: { access: QUERY_READ, errors: ['invalid_cursor'] },
    schema: { tags, summary: "The tenant's prompts with their active versions", querystring: listPromptsQuery, response: { 200: promptList } },
    handler: async (request) => prompts.list(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/prompts/:name', {
    config: { access: QUERY_READ, errors: ['not_found'] },
    schema: { tags, summary: 'One prompt with its versions, newest first', params: nameParams, querystring: projectQuery, response: { 200: promptDetail } },
    handler: async (request) => prompts.detail(requireAuth(request).tenantId, request.query.project_id, request.params.name),
  });

  app.get('/v1/prompts/:name/active', {
    config: { access: QUERY_READ, errors: ['not_found'] },
    schema: { tags, summary: "The prompt's active version, as SDKs fetch it", params: nameParams, querystring: activeQuery, response: { 200: activePrompt } },
    handler: async (request) => {
      const auth = requireAuth(request);
      const projectId = request.query.project_id ?? auth.defaultProjectId;
      if (!projectId) throw badRequest('bad_request', 'project_id is required without an API key of a project');
      return prompts.active(auth.tenantId, projectId, request.params.name);
    },
  });
};

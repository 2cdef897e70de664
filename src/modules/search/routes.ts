import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, ANY_TOKEN, QUERY_READ, WRITERS, requireAuth, type AccessPolicy } from '../../platform/access.js';
import { idParams } from '../../platform/schemas.js';
import { searchBody, searchQuery, searchResults, searchSettings, searchSettingsBody } from './schemas.js';

// Spec: semantic search is Pro and above, and readable with a query-scoped key.
const SEARCH: AccessPolicy = { ...QUERY_READ, plan: 'pro' };
// A search vector of up to 4,096 numbers does not fit a URL: a POST that changes nothing.
const SEARCH_BY_VECTOR: AccessPolicy = { ...SEARCH, readOnly: true, audit: false };
const SETTINGS_WRITE: AccessPolicy = { tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', plan: 'pro', audit: 'project.search_settings.update' };

const BOUNDS = 'limit: default 10, 1 to 100. threshold: the lowest cosine similarity returned (inclusive), default 0, -1 to 1.';

export const searchRoutes: FastifyPluginAsyncZod = async (app) => {
  const search = app.services.search;

  app.post('/v1/search/spans', {
    config: { access: SEARCH_BY_VECTOR, errors: ['not_found', 'embedding.dimension_mismatch'] },
    schema: {
      tags: ['search'],
      summary: "A project's spans nearest to a vector, by cosine similarity",
      description:
        `Nearest first, always within the caller's tenant and the named project. ${BOUNDS} ` +
        "query_vector must have the project's dimension (fixed by its first vector), else 400 embedding.dimension_mismatch; " +
        'a project without vectors answers no results.',
      body: searchBody,
      response: { 200: searchResults },
    },
    handler: async (request) => search.byVector(requireAuth(request).tenantId, request.body),
  });

  app.get('/v1/search/spans', {
    config: { access: SEARCH, errors: ['not_found', 'embedding.dimension_mismatch', 'search.no_embedder', 'search.embedder_failed'] },
    schema: {
      tags: ['search'],
      summary: "A project's spans nearest in meaning to a text",
      description:
        `Embeds q with the tenant's embedding model (its newest openai LLM connection, else the server's), then searches as POST does. ${BOUNDS} ` +
        'Without an embedder: 400 search.no_embedder.',
      querystring: searchQuery,
      response: { 200: searchResults },
    },
    handler: async (request) => search.byText(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/projects/:id/search-settings', {
    config: { access: { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read', plan: 'pro' }, errors: ['not_found'] },
    schema: { tags: ['search'], summary: "A project's semantic search settings", params: idParams, response: { 200: searchSettings } },
    handler: async (request) => search.settings(requireAuth(request).tenantId, request.params.id),
  });

  app.put('/v1/projects/:id/search-settings', {
    config: { access: SETTINGS_WRITE, errors: ['not_found', 'search.no_embedder'] },
    schema: {
      tags: ['search'],
      summary: "Turn server-side embedding of a project's spans on or off",
      description:
        "With embed_spans, a background job embeds the project's new spans that arrive without a vector (input and output text) " +
        "with the tenant's embedding model, within seconds; each span is a call billed to that model's account. Needs an embedder: 400 search.no_embedder.",
      params: idParams,
      body: searchSettingsBody,
      response: { 200: searchSettings },
    },
    handler: async (request) => {
      request.auditResource = { type: 'project', id: request.params.id, details: request.body };
      return search.putSettings(requireAuth(request).tenantId, request.params.id, request.body.embed_spans);
    },
  });
};

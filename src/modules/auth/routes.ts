import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { PUBLIC } from '../../platform/access.js';
import { authConfig, devSession, devSessionBody, devTenantList, devTenantsQuery } from './schemas.js';

/**
 * Sign-in for the web dashboard: public by nature (they are how a browser gets a credential), so
 * served beside the dashboard, outside /v1/, where every request but the audit verification
 * carries a token (spec, Authentication rule 1).
 */
export const authRoutes: FastifyPluginAsyncZod = async (app) => {
  const signIn = app.services.dashboardSignIn;

  app.get('/auth/config', {
    config: { access: PUBLIC },
    schema: {
      tags: ['auth'],
      summary: "How the dashboard signs people in: the operator's OpenID Connect provider, and whether development sign-in is on",
      response: { 200: authConfig },
    },
    handler: async () => signIn.settings(),
  });

  // Not registered at all where development sign-in is off (production, or sessions from an
  // identity provider): a 404 like any unknown path, before any validation could say it exists.
  if (!signIn.devSignInOn) return;

  app.get('/auth/dev-tenants', {
    config: { access: PUBLIC, errors: ['invalid_cursor'] },
    schema: {
      tags: ['auth'],
      summary: 'Development sign-in: every tenant, newest first, to pick one from',
      description: 'Exists outside production only, and only where session tokens are verified with AUTH_JWT_SECRET (no AUTH_JWKS_URL).',
      querystring: devTenantsQuery,
      response: { 200: devTenantList },
    },
    handler: async (request) => signIn.devTenants(request.query.limit, request.query.cursor),
  });

  app.post('/auth/dev-session', {
    config: { access: PUBLIC, errors: ['not_found'] },
    schema: {
      tags: ['auth'],
      summary: 'Development sign-in: a session token for a tenant and role, signed with the development secret',
      description:
        'Exists outside production only, and only where session tokens are verified with AUTH_JWT_SECRET (no AUTH_JWKS_URL). An unknown tenant is 404. The token lasts 8 hours; its subject is dev-<role>.',
      body: devSessionBody,
      response: { 201: devSession },
    },
    handler: async (request, reply) => reply.status(201).send(await signIn.devSession(request.body)),
  });
};

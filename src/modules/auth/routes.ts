import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { PUBLIC } from '../../platform/access.js';
import { authConfig, devSession, devSessionBody, devTenantList, devTenantsQuery } from './schemas.js';

/** Sign-in for the web dashboard: public by nature (they are how a browser gets a credential). */
export const authRoutes: FastifyPluginAsyncZod = async (app) => {
  const signIn = app.services.dashboardSignIn;

  app.get('/v1/auth/config', {
    config: { access: PUBLIC },
    schema: {
      tags: ['auth'],
      summary: "How the dashboard signs people in: the operator's OpenID Connect provider, and whether development sign-in is on",
      response: { 200: authConfig },
    },
    handler: async () => signIn.settings(),
  });

  app.get('/v1/auth/dev-tenants', {
    config: { access: PUBLIC, errors: ['invalid_cursor', 'not_found'] },
    schema: {
      tags: ['auth'],
      summary: 'Development sign-in: every tenant, newest first, to pick one from',
      description: 'Outside production only, and only where session tokens are verified with AUTH_JWT_SECRET (no AUTH_JWKS_URL); otherwise 404.',
      querystring: devTenantsQuery,
      response: { 200: devTenantList },
    },
    handler: async (request) => signIn.devTenants(request.query.limit, request.query.cursor),
  });

  app.post('/v1/auth/dev-session', {
    config: { access: PUBLIC, errors: ['not_found'] },
    schema: {
      tags: ['auth'],
      summary: 'Development sign-in: a session token for a tenant and role, signed with the development secret',
      description:
        'Outside production only, and only where session tokens are verified with AUTH_JWT_SECRET (no AUTH_JWKS_URL); otherwise 404, as is an unknown tenant. The token lasts 8 hours; its subject is dev-<role>.',
      body: devSessionBody,
      response: { 201: devSession },
    },
    handler: async (request, reply) => reply.status(201).send(await signIn.devSession(request.body)),
  });
};

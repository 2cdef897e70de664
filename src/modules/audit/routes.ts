import type { FastifyError } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, ANY_TOKEN, PUBLIC, requireAuth, type AccessPolicy } from '../../platform/access.js';
import { badRequest } from '../../platform/errors.js';
import { validationError } from '../../platform/http-errors.js';
import { auditAnchorView, auditLogPage, chainVerification, listAuditLogQuery, publicKeyView, verifyAnchorQuery } from './schemas.js';

// Viewer and above may read the audit log (spec); it is outside the `query` scope, hence 'admin'.
const auditReader: AccessPolicy = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'admin' };

export const auditRoutes: FastifyPluginAsyncZod = async (app) => {
  const audit = app.services.audit;

  app.get('/v1/audit-log', {
    config: { access: auditReader, errors: ['invalid_cursor'] },
    schema: { tags: ['audit'], summary: "The tenant's audit log, newest first", querystring: listAuditLogQuery, response: { 200: auditLogPage } },
    handler: async (request) => audit.list(requireAuth(request).tenantId, request.query),
  });

  app.get('/v1/audit-log/verify', {
    config: { access: auditReader, responseDeadline: false },
    schema: { tags: ['audit'], summary: "Verify the tenant's audit hash chain row by row", response: { 200: chainVerification } },
    handler: async (request) => audit.verifyChain(requireAuth(request).tenantId),
  });

  app.get('/v1/audit/verify', {
    // Public, yet it reads Postgres: a 503 when it does not answer.
    config: { access: PUBLIC, errors: ['service_unavailable'] },
    schema: {
      tags: ['audit'],
      summary: "Check a tenant's signed audit anchor for a day (no credential)",
      querystring: verifyAnchorQuery,
      response: { 200: auditAnchorView },
    },
    // The spec gives this endpoint one error response: any bad or missing parameter is a 400,
    // not the 422 that a missing field gets elsewhere.
    attachValidation: true,
    handler: async (request) => {
      // The spec gives this endpoint a single error response: a missing parameter is a 400 too.
      if (request.validationError) {
        const described = validationError(request.validationError as FastifyError, request);
        throw badRequest('bad_request', described.message, described.extra);
      }
      const { tenant_id, date, expected_head_hash } = request.query;
      return audit.verifyAnchor(tenant_id, date, expected_head_hash);
    },
  });

  // Published to anyone who verifies an anchor, so outside /v1/: every /v1/ request but the
  // verification itself carries a token (spec, Authentication rule 1).
  app.get('/audit/public-key', {
    config: { access: PUBLIC, errors: ['service_unavailable'] },
    schema: { tags: ['audit'], summary: 'The Ed25519 public key that signs audit anchors (no credential)', response: { 200: publicKeyView } },
    handler: async () => audit.publicKey(),
  });
};

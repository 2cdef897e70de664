import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ALL_ROLES, ANY_TOKEN, type AccessPolicy } from '../../platform/access.js';
import { DEPRECATIONS, type Deprecation } from '../../platform/deprecations.js';
import { deprecationList } from './schemas.js';

const POLICY =
  'Deprecated endpoints and parameters keep working until their sunset day. Responses of a deprecated endpoint, ' +
  'and responses to a request that used a deprecated parameter, carry Deprecation (RFC 9745) and Sunset (RFC 8594) ' +
  'headers and a Link to this list. Incompatible changes ship under /v2, with v1 supported for at least 12 months after.';

const toView = ({ route, ...d }: Deprecation) => ({ ...d, path: route.replace(/:(\w+)/g, '{$1}') });

// Any valid credential, whatever its role or scope (a query key must see what will stop working):
// every /v1/ request but the audit verification carries a token (spec, Authentication rule 1).
const anyCaller: AccessPolicy = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' };

export const deprecationRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get('/v1/deprecations', {
    config: { access: anyCaller },
    schema: { tags: ['deprecations'], summary: 'Deprecated endpoints and parameters with their dates (any credential)', response: { 200: deprecationList } },
    handler: async () => ({ deprecations: DEPRECATIONS.map(toView), policy: POLICY }),
  });
};

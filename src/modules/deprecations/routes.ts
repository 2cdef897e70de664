import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { PUBLIC } from '../../platform/access.js';
import { DEPRECATIONS, type Deprecation } from '../../platform/deprecations.js';
import { deprecationList } from './schemas.js';

const POLICY =
  'Deprecated endpoints and parameters keep working until their sunset day. Responses of a deprecated endpoint, ' +
  'and responses to a request that used a deprecated parameter, carry Deprecation (RFC 9745) and Sunset (RFC 8594) ' +
  'headers and a Link to this list. Incompatible changes ship under /v2, with v1 supported for at least 12 months after.';

const toView = ({ route, ...d }: Deprecation) => ({ ...d, path: route.replace(/:(\w+)/g, '{$1}') });

export const deprecationRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get('/v1/deprecations', {
    config: { access: PUBLIC },
    schema: { tags: ['deprecations'], summary: 'Deprecated endpoints and parameters with their dates (no credential)', response: { 200: deprecationList } },
    handler: async () => ({ deprecations: DEPRECATIONS.map(toView), policy: POLICY }),
  });
};

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ALL_ROLES, ANY_TOKEN, WRITERS, requireAuth } from '../../platform/access.js';
import { modelParams, modelPriceBody, modelPriceList, modelPriceOverride } from './schemas.js';

export const pricingRoutes: FastifyPluginAsyncZod = async (app) => {
  const pricing = app.services.pricing;
  const write = (audit: string) => ({ tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', audit }) as const;

  app.get('/v1/model-prices', {
    config: { access: { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' } },
    schema: {
      tags: ['model-prices'],
      summary: 'Built-in model prices and this tenant\'s overrides',
      description: 'Prices in USD per million tokens. Ingest prices a span without a cost by override first, then the built-in table.',
      response: { 200: modelPriceList },
    },
    handler: async (request) => pricing.list(requireAuth(request).tenantId),
  });

  app.put('/v1/model-prices/:model', {
    config: { access: write('model_price.set') },
    schema: {
      tags: ['model-prices'],
      summary: 'Set this tenant\'s price for a model',
      description: 'Applies to traces ingested afterwards (at once on the replica that served the call, within 30 s on others); stored costs are not recomputed.',
      params: modelParams,
      body: modelPriceBody,
      response: { 200: modelPriceOverride },
    },
    handler: async (request) => {
      const saved = await pricing.set(requireAuth(request).tenantId, request.params.model, request.body);
      request.auditResource = { type: 'model_price', id: saved.model, details: request.body };
      return saved;
    },
  });

  app.delete('/v1/model-prices/:model', {
    config: { access: write('model_price.delete'), errors: ['not_found'] },
    schema: {
      tags: ['model-prices'],
      summary: 'Remove this tenant\'s price for a model (the built-in price applies again)',
      params: modelParams,
      response: { 204: z.null().describe('Override removed') },
    },
    handler: async (request, reply) => {
      const tenantId = requireAuth(request).tenantId;
      const model = await pricing.remove(tenantId, request.params.model);
      request.auditResource = { type: 'model_price', id: model };
      return reply.status(204).send(null);
    },
  });
};

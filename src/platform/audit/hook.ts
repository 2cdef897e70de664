import type { FastifyInstance } from 'fastify';
import type { Sql } from '../../stores/pg.js';
import { appendAudit } from './chain.js';

/**
 * Every successful state-changing request appends to its tenant's audit chain before the response
 * leaves, so an acknowledged change always has its audit row. The action name comes from the
 * route's access policy (assertRouteHasPolicy makes mutating routes declare one).
 */
export function registerAuditTrail(app: FastifyInstance, sql: Sql): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const action = request.routeOptions.config?.access?.audit;
    const auth = request.auth;
    if (!action || !auth || reply.statusCode >= 400) return payload;
    const params = (request.params ?? {}) as Record<string, unknown>;
    const resource = request.auditResource;
    try {
      await appendAudit(sql, auth.tenantId, {
        actorType: auth.userId ? 'user' : 'api_key',
        actorId: auth.userId ?? auth.apiKeyId,
        action,
        resourceType: resource?.type ?? action.split('.')[0] ?? null,
        resourceId: resource?.id ?? (typeof params.id === 'string' ? params.id : null),
        requestId: request.id,
        details: resource?.details ?? {},
      });
    } catch (err) {
      // The change itself is committed; failing the response now would invite a duplicate retry.
      request.log.error({ err, action }, 'audit append failed');
    }
    return payload;
  });
}

import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Sql } from '../../stores/pg.js';
import type { AuthContext } from '../auth.js';
import { appendAudit, type AuditEntry } from './chain.js';

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
    await appendRequestAudit(sql, request.log, auth, {
      action,
      resourceType: resource?.type ?? action.split('.')[0] ?? null,
      resourceId: resource?.id ?? (typeof params.id === 'string' ? params.id : null),
      requestId: request.id,
      details: resource?.details ?? {},
    });
    return payload;
  });
}

/**
 * Appends the audit row of a request that changed something, as the credential's actor. A failure
 * is logged, not thrown: the change itself is committed, and failing the response now would invite
 * a duplicate retry. Used by the HTTP hook above and by the OTLP/gRPC receiver.
 */
export async function appendRequestAudit(
  sql: Sql,
  log: Pick<FastifyBaseLogger, 'error'>,
  auth: AuthContext,
  entry: Pick<AuditEntry, 'action' | 'resourceType' | 'resourceId' | 'requestId' | 'details'>,
): Promise<void> {
  try {
    await appendAudit(sql, auth.tenantId, { actorType: auth.userId ? 'user' : 'api_key', actorId: auth.userId ?? auth.apiKeyId, ...entry });
  } catch (err) {
    log.error({ err, action: entry.action, request_id: entry.requestId }, 'audit append failed');
  }
}

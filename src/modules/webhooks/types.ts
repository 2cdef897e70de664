import type { TxSql } from '../../stores/pg.js';

/**
 * The port other modules emit domain events through (failure clusters, anomalies, prompt
 * deployments). WebhookService.emit implements it: the event is stored and delivered to the
 * tenant's subscribed webhooks; `tx` stores it in the caller's transaction.
 */
export interface EventSink {
  emit(tenantId: string, event: { type: string; project_id: string | null; data: Record<string, unknown> }, tx?: TxSql): Promise<string>;
}

import { appendAudit } from '../../platform/audit/chain.js';
import type { ClickHouseStore } from '../../stores/clickhouse.js';
import type { Sql } from '../../stores/pg.js';
import { metricsRetention } from '../metrics/service.js';
import { vectorRetention } from '../search/service.js';
import { traceRetention } from '../traces/service.js';
import { retentionRepository } from './repo.js';
import { RetentionService, type RetentionDeps } from './service.js';

export interface RetentionComposition extends Omit<RetentionDeps, 'vectors' | 'traceStore' | 'metrics' | 'audit'> {
  sql: Sql;
  ch: ClickHouseStore;
}

/**
 * The retention service, built once by the composition root (src/services.ts): the ClickHouse
 * side of each module that owns expiring tables (traces, metrics, search), and the Postgres
 * services of the modules whose rows hang off traces.
 */
export function buildRetentionService({ sql, ch, ...modules }: RetentionComposition): RetentionService {
  return new RetentionService(retentionRepository(sql), {
    ...modules,
    vectors: vectorRetention(ch, modules.log),
    traceStore: traceRetention(ch, modules.log),
    metrics: metricsRetention(ch, modules.log),
    audit: (tenantId, entry) => appendAudit(sql, tenantId, entry),
  });
}

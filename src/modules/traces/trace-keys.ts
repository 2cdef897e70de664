import { millisToClickHouse } from '../../platform/time.js';
import { bind, type TenantWhere } from '../../stores/clickhouse-where.js';
import type { TraceKeyPosition } from './types.js';

/**
 * Keeps the rows at these places of the traces sorting key (project_id, started_at, id), written as
 * three IN lists so the primary key reads only their granules: of `traces` (`id`), or of a table
 * keyed the same way by trace (`trace_id`: trace_tokens).
 */
export function atTraceKeys(where: TenantWhere, keys: readonly TraceKeyPosition[], idColumn: 'id' | 'trace_id' = 'id'): TenantWhere {
  const ids = bind('Array(UUID)', keys.map((k) => k.id));
  where
    .and`project_id IN ${bind('Array(UUID)', [...new Set(keys.map((k) => k.projectId))])}`
    .and`started_at IN ${bind("Array(DateTime64(3, 'UTC'))", [...new Set(keys.map((k) => millisToClickHouse(k.startedAtMs)))])}`;
  // The column is one of two names from code.
  return idColumn === 'id' ? where.and`id IN ${ids}` : where.and`trace_id IN ${ids}`;
}

import type { TenantWhere } from '../../stores/clickhouse-where.js';

/** Inclusive bounds of started_at (a DateTime64(3) column) in whole milliseconds, or null when open. */
export interface StartedAtRange {
  fromMs: number | null;
  toMs: number | null;
}

/** Keyset position of a trace in the newest-first order: started_at as a ClickHouse literal, id. */
export interface TracePosition {
  startedAt: string;
  id: string;
}

/**
 * The filters of one trace listing bound to its tenant (TraceFilter, built by TraceService.filter):
 * other modules that read the traces table (sessions) take their WHERE clause from it.
 */
export interface TenantTraceFilter {
  readonly tenantId: string;
  readonly range: StartedAtRange;
  /** Stable digest of the filters, carried in cursors so a cursor only continues its own listing. */
  readonly fingerprint: string;
  /** A fresh WHERE clause for one query: tenant first, then every filter. */
  where(): TenantWhere;
}

/**
 * Seam for Trace.control_loop_depth: the number of executed retry control actions on a trace
 * across all policy executions, escalations excluded (spec, Trace). The control module provides
 * the reader over its control-action store (controlLoopDepth in src/modules/control/service.ts).
 */
export interface ControlLoopDepthReader {
  depth(tenantId: string, traceId: string): Promise<number>;
}

/** A trace's place in the traces sorting key (tenant, project_id, started_at, id). */
export interface TraceKeyPosition {
  id: string;
  projectId: string;
  startedAtMs: number;
}

/**
 * Seam for Trace.control_loop_depth: the number of executed retry control actions on a trace
 * across all policy executions, escalations excluded (spec, Trace). The control module provides
 * the reader over its control-action store (controlLoopDepth in src/modules/control/service.ts).
 */
export interface ControlLoopDepthReader {
  depth(tenantId: string, traceId: string): Promise<number>;
}

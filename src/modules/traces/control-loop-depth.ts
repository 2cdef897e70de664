/**
 * Seam for Trace.control_loop_depth: the number of executed retry control actions on a trace
 * across all policy executions, escalations excluded (spec, Trace). Control actions arrive with the
 * control-loop issue; until then no trace has any, so the depth is 0. That issue replaces
 * `noControlActionsYet` in src/services.ts with a reader over its control-action store.
 */
export interface ControlLoopDepthReader {
  depth(tenantId: string, traceId: string): Promise<number>;
}

export const noControlActionsYet: ControlLoopDepthReader = {
  async depth() {
    return 0;
  },
};

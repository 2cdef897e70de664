import { unavailable } from '../../platform/errors.js';
import { WriteTimeoutError, type GroupCommitBatcher } from './batcher.js';
import type { TraceRegistry } from './registry.js';
import type { Registration } from './registry-repo.js';
import type { SpanRow, TraceRow } from './rows.js';

/**
 * Group-commits a request's rows and answers only once they are committed. On failure nothing is
 * acknowledged (503, the client retries) and the ids this request reserved are abandoned to
 * settlement — except after a time-out, when the write may still commit and they stay its own.
 */
export async function commitRows(
  batcher: GroupCommitBatcher,
  registry: TraceRegistry,
  rows: { tenantId: string; traces: readonly TraceRow[]; spans: readonly SpanRow[]; registrations: readonly Registration[]; reservedIds: readonly string[] },
): Promise<void> {
  try {
    await batcher.submit(rows.traces, rows.spans, rows.registrations);
  } catch (err) {
    if (!(err instanceof WriteTimeoutError)) await registry.abandon(rows.tenantId, rows.reservedIds).catch(() => {});
    throw Object.assign(unavailable('the trace store did not accept the write; retry later', 2), { cause: err });
  }
}

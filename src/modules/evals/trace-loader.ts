import type { Trace } from '../traces/schemas.js';
import type { TraceService } from '../traces/service.js';

const MAX_BATCH = 500;

interface Waiting {
  tenantId: string;
  id: string;
  resolve: (trace: Trace | undefined) => void;
  reject: (err: unknown) => void;
}

/**
 * Coalesces the trace reads of evaluations scored at the same time (the evals worker runs many
 * jobs at once) into one registry lookup and one ClickHouse query per tenant, instead of a point
 * read each. Reads asked for while a batch is out wait for it and go together in the next, like
 * the ingest group commit: on the embedded engine, whose queries run one at a time, that is the
 * difference between tens and hundreds of evaluations a second.
 */
export class TraceBatchLoader {
  private waiting: Waiting[] = [];
  private busy = false;

  constructor(private readonly traces: Pick<TraceService, 'findMany'>) {}

  load(tenantId: string, id: string): Promise<Trace | undefined> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ tenantId, id, resolve, reject });
      if (!this.busy) {
        this.busy = true;
        // Whatever else asks in this turn of the event loop joins the first batch.
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, MAX_BATCH);
      const byTenant = new Map<string, Waiting[]>();
      for (const w of batch) byTenant.set(w.tenantId, [...(byTenant.get(w.tenantId) ?? []), w]);
      await Promise.all(
        [...byTenant].map(([tenantId, group]) =>
          this.traces.findMany(tenantId, [...new Set(group.map((w) => w.id))]).then(
            (found) => group.forEach((w) => w.resolve(found.get(w.id))),
            (err: unknown) => group.forEach((w) => w.reject(err)),
          ),
        ),
      );
    }
    this.busy = false;
  }
}

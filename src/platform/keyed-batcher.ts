interface Pending<I, O> {
  item: I;
  resolve(value: O): void;
  reject(err: unknown): void;
}

/**
 * Runs work that must be serialized per key (a tenant's audit chain head, its monthly usage row)
 * one batch at a time per key: the first item runs at once, and the items that arrive while a
 * batch runs go together into the next one. Under load this turns N transactions that queue
 * on one row lock, each holding it across several round trips, into a few transactions of N/k
 * items each, and no two transactions of this process wait on each other for that row.
 * `run` answers one output per item, in order; if it throws, every item of the batch fails.
 */
export class KeyedBatcher<I, O> {
  private readonly queues = new Map<string, Pending<I, O>[]>();

  constructor(private readonly run: (key: string, items: I[]) => Promise<O[]>) {}

  submit(key: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const queue = this.queues.get(key);
      if (queue) {
        queue.push({ item, resolve, reject });
        return;
      }
      this.queues.set(key, [{ item, resolve, reject }]);
      void this.drain(key);
    });
  }

  private async drain(key: string): Promise<void> {
    for (;;) {
      const batch = this.queues.get(key)!;
      if (batch.length === 0) {
        this.queues.delete(key);
        return;
      }
      // Later arrivals queue behind this batch under the same key.
      this.queues.set(key, []);
      try {
        const outputs = await this.run(key, batch.map((p) => p.item));
        batch.forEach((p, i) => p.resolve(outputs[i]!));
      } catch (err) {
        for (const p of batch) p.reject(err);
      }
    }
  }
}

import { describe, expect, it } from 'vitest';
import { GroupCommitBatcher, WriteTimeoutError, abandonAfterMs, type RowBatch } from '../../src/modules/ingest/batcher.js';
import type { Registration } from '../../src/modules/ingest/registry-repo.js';

/**
 * The group-commit batcher's ordering promises, with a write whose completion the test controls
 * (the batcher's collaborator is a function; real ClickHouse writes are covered by the ingest tests).
 */
const registration = (traceId: string): Registration => ({ tenantId: 't', traceId, projectId: 'p', startedAtMs: 0, source: 'native' });

function controlledWrite() {
  const writes: { batch: RowBatch; commit(): void; fail(err: Error): void }[] = [];
  const write = (batch: RowBatch) =>
    new Promise<void>((resolve, reject) => writes.push({ batch, commit: resolve, fail: reject }));
  return { writes, write };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 20));
const options = { maxRows: 1_000, maxWaitMs: 1, maxConcurrentWrites: 1, writeTimeoutMs: 100 };

describe('GroupCommitBatcher', () => {
  it('answers a request only after its write committed and its confirmation ran, in that order', async () => {
    const { writes, write } = controlledWrite();
    const events: string[] = [];
    const batcher = new GroupCommitBatcher(write, async (batch) => void events.push(`confirm ${batch.registrations.map((r) => r.traceId).join(',')}`), options);
    const a = batcher.submit({ registrations: [registration('a')] }).then(() => events.push('a answered'));
    const b = batcher.submit({ registrations: [registration('b')] }).then(() => events.push('b answered'));
    await tick();
    expect(writes).toHaveLength(1);
    expect(events).toEqual([]);
    writes[0]!.commit();
    await Promise.all([a, b]);
    expect(events).toEqual(['confirm a,b', 'a answered', 'b answered']);
  });

  it('fails the requests of a write that outlives its time-out, and confirms that write if it commits later', async () => {
    const { writes, write } = controlledWrite();
    const confirmed: string[] = [];
    const batcher = new GroupCommitBatcher(write, async (batch) => void confirmed.push(...batch.registrations.map((r) => r.traceId)), options);
    const late = batcher.submit({ registrations: [registration('late')] });
    await expect(late).rejects.toBeInstanceOf(WriteTimeoutError);
    expect(confirmed).toEqual([]);

    // The slot is free again: the next request is written without waiting for the stuck one.
    const next = batcher.submit({ registrations: [registration('next')] });
    await tick();
    expect(writes).toHaveLength(2);
    writes[1]!.commit();
    await next;
    writes[0]!.commit();
    await tick();
    expect(confirmed).toEqual(['next', 'late']);
  });

  it('never confirms a write that failed', async () => {
    const { writes, write } = controlledWrite();
    let confirmations = 0;
    const batcher = new GroupCommitBatcher(write, async () => void (confirmations += 1), options);
    const failing = batcher.submit({ registrations: [registration('x')] });
    await tick();
    writes[0]!.fail(new Error('insert refused'));
    await expect(failing).rejects.toThrow('insert refused');
    expect(confirmations).toBe(0);
  });

  it('presumes a reservation abandoned only after a queued write and its own write could both have timed out', () => {
    expect(abandonAfterMs({ maxWaitMs: 5, writeTimeoutMs: 10_000 })).toBeGreaterThan(5 + 2 * 10_000);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClickHouseStore } from '../../src/stores/clickhouse.js';
import { startApp, type TestContext } from '../helpers/app.js';

/**
 * The embedded engine's client (chdb-pool.ts): a query that fails part-way leaves its formatted
 * output on its chDB connection, and the next query of that connection would receive it. Every
 * call here runs on a connection of its own, and a failed one is never used again.
 */
let ctx: TestContext;
let ch: ClickHouseStore;

beforeAll(async () => {
  ctx = await startApp();
  ch = ctx.stores.ch;
});
afterAll(() => ctx.close());

// About 32 MB of rows, in blocks of 1,000, then an error at the 200,000th: the engine has formatted most of them.
const failingPartWay = () =>
  ch.rows('test.fails_part_way', "SELECT number, repeat('x', 100) AS pad, throwIf(number = 200000) AS boom FROM numbers(1000000)", {}, { max_block_size: '1000' });

describe('embedded ClickHouse after a query fails part-way', () => {
  it('gives the next query only its own answer', async () => {
    await expect(failingPartWay()).rejects.toThrow(/throwIf/);
    expect(await ch.rows('test.next', "SELECT 'next' AS who")).toEqual([{ who: 'next' }]);
    await expect(failingPartWay()).rejects.toThrow(/throwIf/);
    const { stream } = await ch.client.exec({ query: "SELECT 'raw' AS who FORMAT JSONEachRow" });
    expect(Buffer.concat((await stream.toArray()) as Buffer[]).toString()).toBe('{"who":"raw"}\n');
  });

  it('keeps every concurrent reader to its own rows while others fail', async () => {
    const reads = Array.from({ length: 6 }, (_, i) => ch.rows<{ n: number }>('test.concurrent', `SELECT ${i} AS n FROM numbers(3)`));
    const failures = Array.from({ length: 3 }, () => failingPartWay().then(() => 'answered', () => 'failed'));
    expect(await Promise.all(failures)).toEqual(['failed', 'failed', 'failed']);
    expect((await Promise.all(reads)).map((rows) => rows.map((r) => r.n))).toEqual([0, 1, 2, 3, 4, 5].map((i) => [i, i, i]));
    expect(await ch.rows('test.after', "SELECT currentDatabase() = 'looptrace' AS ours")).toEqual([{ ours: 1 }]);
  });
});

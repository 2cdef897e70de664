import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withLiterals } from '../../src/stores/chdb-literals.js';
import type { ClickHouseStore } from '../../src/stores/clickhouse.js';
import { startApp, type TestContext } from '../helpers/app.js';

/**
 * The embedded engine's parameters written into the query text (chdb-literals.ts): every value
 * reads back as the parameter would have, no value can end its literal early, and queries that
 * bound parameters no longer wait for one another.
 */
let ctx: TestContext;
let ch: ClickHouseStore;

beforeAll(async () => {
  ctx = await startApp();
  ch = ctx.stores.ch;
});
afterAll(() => ctx.close());

// A lone surrogate reaches the engine as U+FFFD, whether bound or written (the binding's UTF-8).
const asStored = (text: string) => text.replace(/\p{Cs}/gu, '\ufffd');

describe('parameters written as literals', () => {
  it('reads any string back as it was, quotes, backslashes, control characters and SQL in it included', async () => {
    const tricky = fc.constantFrom("'", "\\'", '\\', "''", '\u0000', '\n', '\u001f', '\u007f', "'); DROP TABLE spans; --", '{s:String}', '\\x27', 'é', '🙂', '\ud800');
    const text = fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 20 }), tricky), { maxLength: 6 }).map((parts) => parts.join(''));
    await fc.assert(
      fc.asyncProperty(text, async (s) => {
        const query = 'SELECT {s:String} AS s, length({s:String}) AS bytes';
        expect(withLiterals(query, { s })).toBeDefined();
        const [row] = await ch.rows<{ s: string; bytes: string }>('test.literal_string', query, { s });
        expect(row!.s).toBe(asStored(s));
        expect(Number(row!.bytes)).toBe(Buffer.byteLength(asStored(s)));
      }),
      { numRuns: 300 },
    );
  });

  it('reads UUIDs, date-times and numbers at the edges of their types as their parameters', async () => {
    const params = {
      id: 'A1B2C3D4-0000-4000-8000-00000000000F',
      ids: [randomUUID(), randomUUID()],
      none: [],
      at: '2026-11-26 23:59:59.123456789',
      ms: '1970-01-01 00:00:00.001',
      big: 2n ** 64n - 1n,
      low: -(2n ** 63n),
      small: 4_294_967_295,
      f: [0.1, -1.5e300],
      word: "it's",
    };
    const query = `SELECT toString({id:UUID}) AS id, arrayMap(x -> toString(x), {ids:Array(UUID)}) AS ids, length({none:Array(UUID)}) AS none,
      toString({at:DateTime64(9, 'UTC')}) AS at, toUnixTimestamp64Milli({ms:DateTime64(3, 'UTC')}) AS ms, toString({big:UInt64}) AS big,
      toString({low:Int64}) AS low, {small:UInt32} AS small, {f:Array(Float64)} AS f, [{word:String}] AS words`;
    expect(withLiterals(query, params)).toBeDefined();
    expect(await ch.rows('test.literal_types', query, params)).toEqual([
      {
        id: params.id.toLowerCase(),
        ids: params.ids,
        none: 0,
        at: params.at,
        ms: 1,
        big: '18446744073709551615',
        low: '-9223372036854775808',
        small: 4_294_967_295,
        f: [0.1, -1.5e300],
        words: ["it's"],
      },
    ]);
  });

  it('leaves bound what it cannot write, and the query still answers', async () => {
    for (const [query, params] of [
      ['SELECT {n:UInt8} AS v', { n: 256 }],
      ['SELECT {n:UInt32} AS v', { n: -1 }],
      ['SELECT {n:Float64} AS v', { n: Number.NaN }],
      ['SELECT {id:UUID} AS v', { id: "x' OR 1 = 1 --" }],
      ['SELECT {at:DateTime64(3, \'UTC\')} AS v', { at: 1_700_000_000 }],
      ['SELECT {pair:Tuple(UInt8, UInt8)} AS v', { pair: [1, 2] }],
      ['SELECT {a:String} AS v', {}],
      ['SELECT { a : String } AS v, {b:String}', { a: 'x', b: 'y' }],
    ] as const) {
      expect(withLiterals(query, params), query).toBeUndefined();
    }
    // Beyond about 350 UUIDs a list is cheaper bound than parsed.
    const ids = Array.from({ length: 1000 }, () => randomUUID());
    const query = 'SELECT length({ids:Array(UUID)}) AS n';
    expect(withLiterals(query, { ids })).toBeUndefined();
    expect(await ch.rows('test.literal_long', query, { ids })).toEqual([{ n: 1000 }]);
  });

  it('lets two queries with parameters run at the same time (the bound ones ran one after the other)', async () => {
    const marker = `marker-${randomUUID()}`;
    let slowDone = false;
    const slow = ch.rows('test.literal_slow', 'SELECT sleepEachRow(0.1) AS z, {marker:String} AS m FROM numbers(20) SETTINGS max_block_size = 1', { marker }).finally(() => {
      slowDone = true;
    });
    let seen = false;
    while (!slowDone && !seen) {
      const [row] = await ch.rows<{ n: string }>(
        'test.literal_watch',
        'SELECT count() AS n FROM system.processes WHERE position(query, {marker:String}) > 0 AND position(query, {sleep:String}) > 0 AND query_id != queryID()',
        { marker, sleep: 'sleepEachRow' },
      );
      seen = Number(row!.n) > 0;
    }
    await slow;
    expect(seen).toBe(true);
  });
});

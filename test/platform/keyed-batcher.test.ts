import { describe, expect, it } from 'vitest';
import { KeyedBatcher } from '../../src/platform/keyed-batcher.js';

describe('KeyedBatcher', () => {
  it('runs one batch per key at a time, batching what arrives meanwhile, keys independently', async () => {
    const batches: string[] = [];
    let running = 0;
    let maxRunning = 0;
    const release: (() => void)[] = [];
    const batcher = new KeyedBatcher<number, number>(async (key, items) => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      batches.push(`${key}:${items.join(',')}`);
      await new Promise<void>((resolve) => release.push(resolve));
      running -= 1;
      return items.map((n) => n * 10);
    });
    const a1 = batcher.submit('a', 1);
    const b1 = batcher.submit('b', 1);
    const a2 = batcher.submit('a', 2);
    const a3 = batcher.submit('a', 3);
    expect(batches).toEqual(['a:1', 'b:1']); // a's first item runs alone; b does not wait for a
    release.shift()!();
    release.shift()!();
    expect(await a1).toBe(10);
    expect(await b1).toBe(10);
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual(['a:1', 'b:1', 'a:2,3']);
    release.shift()!();
    expect(await Promise.all([a2, a3])).toEqual([20, 30]);
    expect(maxRunning).toBe(2); // one per key
  });

  it('fails every item of a failed batch and goes on with the next one', async () => {
    let calls = 0;
    const batcher = new KeyedBatcher<string, string>(async (_key, items) => {
      calls += 1;
      if (calls === 1) throw new Error('store down');
      return items.map((s) => s.toUpperCase());
    });
    const first = batcher.submit('k', 'x');
    const second = batcher.submit('k', 'y');
    await expect(first).rejects.toThrow('store down');
    expect(await second).toBe('Y');
    expect(await batcher.submit('k', 'z')).toBe('Z');
  });
});

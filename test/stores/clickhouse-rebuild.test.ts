import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createStatement, rebuildWithSettings } from '../../src/stores/clickhouse-rebuild.js';
import type { ClickHouseStore } from '../../src/stores/clickhouse.js';
import { startApp, type TestContext } from '../helpers/app.js';

/**
 * Table rebuilds (clickhouse-rebuild.ts) on the embedded engine: the traces table as migration
 * 007 leaves it, and a probe table rebuilt from each state a crash can leave behind.
 */
let ctx: TestContext;
let ch: ClickHouseStore;
const FINE = { index_granularity_bytes: 1_048_576 };
const PROBE = 'rebuild_probe';

beforeAll(async () => {
  ctx = await startApp();
  ch = ctx.stores.ch;
});
afterAll(() => ctx.close());

const createQuery = async (name: string) =>
  (await ch.rowsFromPrimary<{ q: string }>('test', 'SELECT create_table_query AS q FROM system.tables WHERE database = currentDatabase() AND name = {name:String}', { name }))[0]?.q;

const probeRows = async (table = PROBE) =>
  ch.rowsFromPrimary<{ k: number; v: number; text: string }>('test', `SELECT k, v, text FROM ${table} FINAL ORDER BY k`);

/** 3,000 rows, then a second version of the first 1,000: FINAL shows 3,000 rows, 1,000 of them at version 2. */
async function createProbe(table = PROBE): Promise<void> {
  await ch.command('test', `CREATE TABLE ${table} (k UInt64, v UInt64, text String CODEC(ZSTD(1)), INDEX idx_k k TYPE minmax GRANULARITY 1)
    ENGINE = ReplacingMergeTree(v) ORDER BY k`);
  await ch.command('test', `INSERT INTO ${table} SELECT number, 1, repeat('x', number % 500) FROM numbers(3000)`);
  await ch.command('test', `INSERT INTO ${table} SELECT number, 2, concat('second ', toString(number)) FROM numbers(1000)`);
}

describe('table rebuilds', () => {
  beforeEach(async () => {
    await ch.command('test', `DROP TABLE IF EXISTS ${PROBE} SYNC`);
    await ch.command('test', `DROP TABLE IF EXISTS ${PROBE}_before_rebuild SYNC`);
  });

  it('migration 007 left traces with granules of at most 1 MiB and every index it had', async () => {
    const traces = await createQuery('traces');
    expect(traces).toMatch(/index_granularity_bytes = 1048576/);
    for (const index of ['idx_id', 'idx_tag_pairs', 'idx_model']) expect(traces).toContain(`INDEX ${index}`);
    // Migration 009 dropped the text index the search no longer reads (it reads trace_tokens).
    expect(traces).not.toContain('idx_text');
    expect(traces).toContain('`is_deleted` UInt8');
    expect(await createQuery('traces_before_rebuild')).toBeUndefined();
    expect(await rebuildWithSettings(ch, { table: 'traces', settings: FINE })).toBe('unchanged');
  });

  it('copies every row and version into a table with the new settings, then drops the old one', async () => {
    await createProbe();
    const before = await probeRows();
    expect(before).toHaveLength(3000);
    expect(await rebuildWithSettings(ch, { table: PROBE, settings: FINE })).toBe('rebuilt');
    expect(await createQuery(PROBE)).toMatch(/SETTINGS index_granularity = 8192, index_granularity_bytes = 1048576$/);
    expect(await createQuery(PROBE)).toContain('INDEX idx_k k TYPE minmax GRANULARITY 1');
    expect(await createQuery(`${PROBE}_before_rebuild`)).toBeUndefined();
    expect(await probeRows()).toEqual(before);
    expect(await rebuildWithSettings(ch, { table: PROBE, settings: FINE })).toBe('unchanged');
  });

  it('finishes a rebuild stopped after the rename', async () => {
    await createProbe();
    const before = await probeRows();
    await ch.command('test', `RENAME TABLE ${PROBE} TO ${PROBE}_before_rebuild`);
    expect(await rebuildWithSettings(ch, { table: PROBE, settings: FINE })).toBe('rebuilt');
    expect(await probeRows()).toEqual(before);
    expect(await createQuery(`${PROBE}_before_rebuild`)).toBeUndefined();
  });

  it('finishes a rebuild stopped during the copy, keeping writes made to the new table meanwhile', async () => {
    await createProbe(`${PROBE}_before_rebuild`);
    const old = await probeRows(`${PROBE}_before_rebuild`);
    const create = createStatement((await createQuery(`${PROBE}_before_rebuild`))!, `${PROBE}_before_rebuild`, PROBE, FINE, '');
    await ch.command('test', create);
    // Part of the copy, and a newer version of row 5 written by ingest while it ran.
    await ch.command('test', `INSERT INTO ${PROBE} SELECT k, v, text FROM ${PROBE}_before_rebuild WHERE k < 1500`);
    await ch.command('test', `INSERT INTO ${PROBE} VALUES (5, 3, 'written during the copy')`);
    expect(await rebuildWithSettings(ch, { table: PROBE, settings: FINE })).toBe('rebuilt');
    const after = await probeRows();
    expect(after).toHaveLength(3000);
    expect(after[5]).toEqual({ k: 5, v: 3, text: 'written during the copy' });
    expect(after.filter((r) => r.k !== 5)).toEqual(old.filter((r) => r.k !== 5));
  });

  it('gives a replicated table a Keeper path of its own and replaces a setting of the same name', () => {
    const old =
      "CREATE TABLE looptrace.traces_before_rebuild (`id` UUID) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/looptrace/traces', '{replica}', version) ORDER BY id SETTINGS index_granularity = 8192, index_granularity_bytes = 10485760";
    expect(createStatement(old, 'traces_before_rebuild', 'traces', FINE, ' ON CLUSTER main')).toBe(
      "CREATE TABLE looptrace.traces ON CLUSTER main (`id` UUID) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/looptrace/traces.rebuilt', '{replica}', version) ORDER BY id SETTINGS index_granularity = 8192, index_granularity_bytes = 1048576",
    );
  });
});

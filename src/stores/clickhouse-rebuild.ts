import type { ClickHouseStore } from './clickhouse.js';

/**
 * MergeTree settings that ClickHouse only accepts at CREATE TABLE (index_granularity_bytes and
 * its kind are read-only afterwards), given to an existing table by copying it into a new one.
 *
 * The steps, each resumable after a crash (the state says which step is next):
 * 1. the table is renamed to `<table>_before_rebuild`;
 * 2. `<table>` is created from the old table's own CREATE statement (every column, codec, index
 *    and setting it has today) plus the new settings;
 * 3. every row is copied; a copy interrupted and run again inserts rows already there, which the
 *    ReplacingMergeTree collapses (same key, same version);
 * 4. the old table is dropped.
 * Writers that arrive between 1 and 2 (milliseconds) get "table does not exist" and retry as on
 * any store error; writes during 3 land in the new table, where their versions win as always.
 * Reads during 3 see the table filling: a one-time wait, measured at about 170 s for 10M traces here.
 */
export interface TableRebuild {
  table: string;
  settings: Record<string, number>;
}

const HOLDING_SUFFIX = '_before_rebuild';

export async function rebuildWithSettings(ch: ClickHouseStore, { table, settings }: TableRebuild): Promise<'unchanged' | 'rebuilt'> {
  const holding = `${table}${HOLDING_SUFFIX}`;
  const onCluster = ch.cluster ? ` ON CLUSTER ${ch.cluster}` : '';
  const createQueries = async () => {
    const rows = await ch.rowsFromPrimary<{ name: string; q: string }>(
      'migrate.rebuild',
      'SELECT name, create_table_query AS q FROM system.tables WHERE database = currentDatabase() AND name IN ({names:Array(String)})',
      { names: [table, holding] },
    );
    return { current: rows.find((r) => r.name === table)?.q, old: rows.find((r) => r.name === holding)?.q };
  };
  let { current, old } = await createQueries();
  if (current !== undefined && old === undefined && hasSettings(current, settings)) return 'unchanged';
  if (old === undefined) {
    if (current === undefined) throw new Error(`rebuild of ${table}: the table does not exist`);
    await ch.command('migrate.rebuild', `RENAME TABLE ${table} TO ${holding}${onCluster}`);
    ({ current, old } = await createQueries());
    if (old === undefined) throw new Error(`rebuild of ${table}: ${holding} is missing after the rename`);
  }
  if (current === undefined) await ch.command('migrate.rebuild', createStatement(old, holding, table, settings, onCluster));
  await ch.command('migrate.rebuild', `INSERT INTO ${table} SELECT * FROM ${holding}`);
  await ch.command('migrate.rebuild', `DROP TABLE ${holding}${onCluster} SYNC`);
  return 'rebuilt';
}

const settingPattern = (name: string, value: number) => new RegExp(`\\b${name} = ${value}\\b`);

function hasSettings(createQuery: string, settings: Record<string, number>): boolean {
  return Object.entries(settings).every(([name, value]) => settingPattern(name, value).test(createQuery));
}

/**
 * The new table's CREATE: the old one's, under the table's name, with `settings` added to its
 * SETTINGS clause (system.tables always shows one, index_granularity at least). A replicated
 * table's Keeper path gets a suffix of its own: the renamed table still holds the old path.
 */
export function createStatement(old: string, oldName: string, table: string, settings: Record<string, number>, onCluster: string): string {
  const named = old.replace(new RegExp(`^CREATE TABLE (\\S+\\.)?${oldName}\\b`), (_m, db: string | undefined) => `CREATE TABLE ${db ?? ''}${table}${onCluster}`);
  if (named === old) throw new Error(`rebuild of ${table}: unexpected CREATE statement`);
  const replicaPath = named.replace(/(Replicated\w*MergeTree\(')([^']+)'/, (_m, head: string, path: string) => `${head}${path}.rebuilt'`);
  const added = Object.entries(settings).map(([name, value]) => `${name} = ${value}`).join(', ');
  if (!/\bSETTINGS\b/.test(replicaPath)) return `${replicaPath} SETTINGS ${added}`;
  // The table's own SETTINGS clause is the last one in its statement; the new ones replace any same name.
  const at = replicaPath.lastIndexOf('SETTINGS');
  const kept = replicaPath
    .slice(at + 'SETTINGS'.length)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0 && !(s.split('=')[0]!.trim() in settings));
  return `${replicaPath.slice(0, at)}SETTINGS ${[...kept, added].join(', ')}`;
}

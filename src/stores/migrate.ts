import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ClickHouseStore } from './clickhouse.js';
import { rebuildWithSettings, type TableRebuild } from './clickhouse-rebuild.js';
import type { Sql } from './pg.js';

const SQL_DIR = fileURLToPath(new URL('../../sql/', import.meta.url));
const CLICKHOUSE_DIR = fileURLToPath(new URL('../../clickhouse/', import.meta.url));
// Arbitrary constants: the advisory locks that serialise migrators across processes.
const PG_MIGRATION_LOCK = 7_245_001;
const CH_MIGRATION_LOCK = 7_245_002;

interface MigrationFile {
  name: string;
  body: string;
  checksum: string;
}

const checksumOf = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * ClickHouse migrations that copy a table into a new one with settings only CREATE TABLE takes
 * (clickhouse-rebuild.ts), applied in name order among the files of clickhouse/.
 *
 * 007: traces get granules of at most 1 MiB (index_granularity_bytes; the default is 10 MiB, about
 * 8,000 traces of bench size). A listing of scattered traces (a search's hits, a session's traces)
 * reads each of its rows by decompressing its granule's text columns from the granule's start:
 * measured on 1M rows of about 1.3 kB in chDB 26.7, 51 scattered rows with their text took 280 ms
 * with 10 MiB granules and 44 ms with 1 MiB ones, their keys alone 33 and 10 ms.
 */
const CLICKHOUSE_REBUILDS: { name: string; rebuild: TableRebuild }[] = [
  { name: '007_traces_fine_granules', rebuild: { table: 'traces', settings: { index_granularity_bytes: 1_048_576 } } },
];

function readMigrations(dir: string): MigrationFile[] {
  return readdirSync(dir)
    .filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((name) => {
      const body = readFileSync(dir + name, 'utf8');
      return { name, body, checksum: checksumOf(body) };
    });
}

/** Runs `work` while holding a session-level advisory lock on one reserved connection. */
async function withAdvisoryLock<T>(sql: Sql, key: number, work: () => Promise<T>): Promise<T> {
  const conn = await sql.reserve();
  try {
    await conn`select pg_advisory_lock(${key})`;
    try {
      return await work();
    } finally {
      await conn`select pg_advisory_unlock(${key})`;
    }
  } finally {
    conn.release();
  }
}

export async function migratePostgres(sql: Sql): Promise<string[]> {
  return withAdvisoryLock(sql, PG_MIGRATION_LOCK, async () => {
    await sql`create table if not exists schema_migrations (
      name text primary key, checksum text not null, applied_at timestamptz not null default now())`;
    const applied = new Set((await sql<{ name: string }[]>`select name from schema_migrations`).map((r) => r.name));
    const done: string[] = [];
    for (const m of readMigrations(SQL_DIR)) {
      if (applied.has(m.name)) continue;
      await sql.begin(async (tx) => {
        await tx.unsafe(m.body);
        await tx`insert into schema_migrations (name, checksum) values (${m.name}, ${m.checksum})`;
      });
      done.push(m.name);
    }
    return done;
  });
}

/**
 * Cluster mode: DDL runs ON CLUSTER and MergeTree engines become their Replicated variants.
 * Files use `{on_cluster}` where a clause may carry ON CLUSTER.
 */
export function renderClickHouseDdl(body: string, cluster: string | undefined): string {
  const onCluster = cluster ? `ON CLUSTER ${cluster}` : '';
  let out = body.replaceAll('{on_cluster}', onCluster);
  if (cluster) {
    out = out.replace(/ENGINE\s*=\s*(\w*)MergeTree\(([^)]*)\)/g, (_m, kind: string, args: string) => {
      const replicaArgs = `'/clickhouse/tables/{shard}/{database}/{table}', '{replica}'`;
      return `ENGINE = Replicated${kind}MergeTree(${args.trim() ? `${replicaArgs}, ${args}` : replicaArgs})`;
    });
  }
  return out;
}

export function splitStatements(body: string): string[] {
  return body
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
    .filter((s) => s.length > 0);
}

export async function migrateClickHouse(ch: ClickHouseStore, sql: Sql): Promise<string[]> {
  return withAdvisoryLock(sql, CH_MIGRATION_LOCK, async () => {
    await ch.command(
      'migrate',
      renderClickHouseDdl(
        `CREATE TABLE IF NOT EXISTS schema_migrations {on_cluster} (name String, checksum String, applied_at DateTime64(3) DEFAULT now64(3))
         ENGINE = ReplacingMergeTree() ORDER BY name`,
        ch.cluster,
      ),
    );
    const applied = new Set(
      (await ch.rowsFromPrimary<{ name: string }>('migrate', 'SELECT name FROM schema_migrations FINAL')).map((r) => r.name),
    );
    const done: string[] = [];
    const files = readMigrations(CLICKHOUSE_DIR).map((m) => ({ ...m, rebuild: undefined as TableRebuild | undefined }));
    const rebuilds = CLICKHOUSE_REBUILDS.map(({ name, rebuild }) => ({ name, body: '', checksum: checksumOf(JSON.stringify(rebuild)), rebuild }));
    for (const m of [...files, ...rebuilds].sort((a, b) => a.name.localeCompare(b.name))) {
      if (applied.has(m.name)) continue;
      if (m.rebuild) await rebuildWithSettings(ch, m.rebuild);
      // ClickHouse DDL is not transactional: every statement is written to be idempotent instead.
      for (const statement of splitStatements(renderClickHouseDdl(m.body, ch.cluster))) {
        await ch.command('migrate', statement);
      }
      await ch.insert('schema_migrations', [{ name: m.name, checksum: m.checksum }]);
      done.push(m.name);
    }
    return done;
  });
}

import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Sql } from './pg.js';

/**
 * With embedded ClickHouse, the Postgres database and LOOPTRACE_DATA_DIR are one installation:
 * tenants, keys and the trace registry in the one, their traces (and, outside production, the key
 * that decrypts the secrets stored in Postgres) in the other. A fresh clone on a machine where an
 * older clone ran would otherwise start on the old database with an empty data directory: tenants
 * whose traces are gone. So the two are paired on first use, an id recorded in both, and a start
 * with a database that belongs with another directory is refused with what to do about it.
 */

/** The file in the data directory that records its pairing. */
export const PAIRING_FILE = 'pairing.json';

interface DirectoryPairing {
  id: string;
  /** The database it was paired with, without a password (for the message). */
  database: string;
  paired_at: string;
}

interface DatabasePairing {
  id: string;
  data_dir: string;
  paired_at: Date;
}

export type PairingCheck =
  | { ok: true; status: 'paired' | 'matched'; id: string }
  | { ok: false; problem: string; otherDataDir: string | null };

/** A database URL fit to print: no password. */
export function displayUrl(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

const day = (d: Date | string) => new Date(d).toISOString().slice(0, 10);

function readDirectoryPairing(dataDir: string): DirectoryPairing | null {
  try {
    const value = JSON.parse(readFileSync(path.join(dataDir, PAIRING_FILE), 'utf8')) as Partial<DirectoryPairing>;
    return typeof value.id === 'string' ? { id: value.id, database: String(value.database ?? 'unknown'), paired_at: String(value.paired_at ?? '') } : null;
  } catch {
    return null;
  }
}

/** Whether embedded ClickHouse has ever written here (its directory exists and is not empty). */
function hasClickHouseData(dataDir: string): boolean {
  try {
    return readdirSync(path.join(dataDir, 'clickhouse')).length > 0;
  } catch {
    return false;
  }
}

/**
 * Checks that `dataDir` and the database behind `sql` belong together, pairing them when neither
 * is paired yet (or the database is new). Safe to run on every start; writes nothing on a mismatch.
 * A database that predates pairing is adopted when the directory has ClickHouse data or the
 * database has no tenants; one with tenants next to a directory without ClickHouse data is not.
 */
export async function checkDataDirPairing(sql: Sql, dataDir: string, databaseUrl: string): Promise<PairingCheck> {
  const dir = path.resolve(dataDir);
  await sql`create table if not exists data_dir_pairing (
    singleton boolean primary key default true check (singleton),
    id uuid not null,
    data_dir text not null,
    paired_at timestamptz not null default now())`;
  const [recorded] = await sql<DatabasePairing[]>`select id, data_dir, paired_at from data_dir_pairing`;
  const here = readDirectoryPairing(dir);
  const database = displayUrl(databaseUrl);

  if (recorded && here?.id === recorded.id) {
    // The same pair, perhaps moved: remember where the directory is now, for the message.
    if (recorded.data_dir !== dir) await sql`update data_dir_pairing set data_dir = ${dir}`;
    return { ok: true, status: 'matched', id: recorded.id };
  }
  if (recorded) {
    const thisOne = here
      ? `this data directory, ${dir}, was paired with another database (${here.database}, on ${day(here.paired_at)})`
      : `this data directory, ${dir}, is new to it`;
    return {
      ok: false,
      problem: `the Postgres database ${database} belongs with another data directory: it was paired with ${recorded.data_dir} on ${day(recorded.paired_at)}; ${thisOne}.`,
      otherDataDir: recorded.data_dir,
    };
  }

  // Before its first migration the database has no tenants table.
  const [state] = await sql<{ migrated: boolean }[]>`select to_regclass('tenants') is not null as migrated`;
  const tenants = state!.migrated ? (await sql<{ n: number }[]>`select count(*)::int as n from tenants`)[0]!.n : 0;
  if (tenants > 0 && here) {
    return {
      ok: false,
      problem: `this data directory, ${dir}, was paired with ${here.database} on ${day(here.paired_at)}; the Postgres database ${database} holds ${tenants} tenant(s) and was never paired with it.`,
      otherDataDir: null,
    };
  }
  if (tenants > 0 && !hasClickHouseData(dir)) {
    return {
      ok: false,
      problem: `the Postgres database ${database} holds ${tenants} tenant(s), but this data directory, ${dir}, has no ClickHouse data: the two were not made together (the database is perhaps an older clone's).`,
      otherDataDir: null,
    };
  }

  const id = here?.id ?? randomUUID();
  const inserted = await sql<{ id: string }[]>`
    insert into data_dir_pairing (id, data_dir) values (${id}, ${dir}) on conflict (singleton) do nothing returning id`;
  if (inserted.length === 0) return checkDataDirPairing(sql, dataDir, databaseUrl); // paired concurrently: check again
  mkdirSync(dir, { recursive: true });
  const pairing: DirectoryPairing = { id, database, paired_at: new Date().toISOString() };
  writeFileSync(path.join(dir, PAIRING_FILE), JSON.stringify(pairing, null, 2) + '\n');
  return { ok: true, status: 'paired', id };
}

/** What to do about a mismatch: the lines printed after the problem. */
export function pairingRemedies(databaseUrl: string, otherDataDir: string | null): string[] {
  const fresh = new URL(databaseUrl);
  const name = decodeURIComponent(fresh.pathname.slice(1));
  fresh.pathname = `/${name}_2`;
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  return [
    'Its tenants\' traces (and, outside production, the key that decrypts the credentials they stored) are not in this data directory. Either:',
    ...(otherDataDir ? [`  - use that data directory:            LOOPTRACE_DATA_DIR=${otherDataDir}`] : []),
    `  - start afresh in another database:   DATABASE_URL=${displayUrl(fresh.toString())}   (created at start)`,
    `  - or drop this one (its tenants are lost) and start again:   psql '${displayUrl(admin.toString())}' -c 'DROP DATABASE ${name}'`,
    'Set it in ./.env, which npm start and `npm run looptrace` both read.',
  ];
}

import postgres from 'postgres';
import { ensureDatabase } from '../../src/stores/pg.js';

const baseUrl = () => process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/looptrace_test';

/**
 * Each test process works in its own database (test/helpers/database.ts), created and migrated by
 * its first app. This drops the ones a run leaves behind, before and after the run; a database
 * still in use (another run at the same time) refuses to be dropped and is left alone.
 */
async function dropProcessDatabases(): Promise<void> {
  const base = new URL(baseUrl());
  const prefix = `${decodeURIComponent(base.pathname.slice(1))}_p`;
  base.pathname = '/postgres';
  const sql = postgres(base.toString(), { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ datname: string }[]>`select datname from pg_database where starts_with(datname, ${prefix})`;
    for (const { datname } of rows) await sql.unsafe(`drop database if exists "${datname}"`).catch(() => {});
  } finally {
    await sql.end();
  }
}

export default async function setup(): Promise<() => Promise<void>> {
  await ensureDatabase(baseUrl()); // the maintenance connection of tests that need no schema
  await dropProcessDatabases();
  return dropProcessDatabases;
}

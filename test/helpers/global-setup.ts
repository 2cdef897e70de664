import { createPg, ensureDatabase } from '../../src/stores/pg.js';
import { migratePostgres } from '../../src/stores/migrate.js';

/** One Postgres database for the run, migrated once; test files isolate themselves by tenant. */
export default async function setup(): Promise<void> {
  const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/looptrace_test';
  await ensureDatabase(url);
  const sql = createPg(url, { max: 2 });
  try {
    await migratePostgres(sql);
  } finally {
    await sql.end();
  }
}

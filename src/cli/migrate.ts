import { ensureDatabase } from '../stores/pg.js';
import { migrateClickHouse, migratePostgres } from '../stores/migrate.js';
import { parseOptions, printJson, wantsHelp } from './args.js';
import type { CliCommand } from './context.js';

export const MIGRATE_USAGE = `usage: looptrace migrate

Creates the Postgres database if missing, then applies pending Postgres (sql/) and ClickHouse
(clickhouse/) migrations. Prints {"postgres":[...],"clickhouse":[...]}: the names applied now.
The server also migrates at start; with embedded ClickHouse run this while the server is stopped.`;

/** The same steps as openStores(config, { migrate: true }), keeping the applied names to print. */
export const migrateCommand: CliCommand = async (args, { stores }) => {
  if (wantsHelp(args)) {
    console.log(MIGRATE_USAGE);
    return 0;
  }
  parseOptions(args, {}, MIGRATE_USAGE);
  await ensureDatabase(stores.config.databaseUrl);
  const postgres = await migratePostgres(stores.sql);
  const clickhouse = await migrateClickHouse(stores.ch, stores.sql);
  printJson({ postgres, clickhouse });
  return 0;
};

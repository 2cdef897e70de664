import { checkDataDirPairing, displayUrl, pairingRemedies } from '../stores/data-dir.js';
import { ensureDatabase } from '../stores/pg.js';
import { parseOptions, printJson, unknownSubcommand, wantsHelp } from './args.js';
import type { CliCommand } from './context.js';

export const DATA_DIR_USAGE = `usage: looptrace data-dir check

With embedded ClickHouse (CLICKHOUSE_URL unset), checks that LOOPTRACE_DATA_DIR and the Postgres
database belong together: pairs them the first time (an id in $LOOPTRACE_DATA_DIR/pairing.json and
in the database), and afterwards exits 1 with what to do when one of them was made with another,
e.g. a fresh clone's empty ./data next to an older clone's database. npm start runs it before
migrating. Prints {"data_dir","database","status"}: status "paired" (now), "matched" or
"not_embedded" (a ClickHouse server holds the traces; nothing to check).`;

export const dataDirCommand: CliCommand = async (args, { stores }) => {
  const [sub, ...rest] = args;
  if (wantsHelp(args)) {
    console.log(DATA_DIR_USAGE);
    return 0;
  }
  if (sub !== 'check') throw unknownSubcommand('data-dir', sub, DATA_DIR_USAGE);
  parseOptions(rest, {}, DATA_DIR_USAGE);
  const { config, sql } = stores;
  const database = displayUrl(config.databaseUrl);
  if (config.clickhouse.url) {
    printJson({ data_dir: config.dataDir, database, status: 'not_embedded' });
    return 0;
  }
  await ensureDatabase(config.databaseUrl);
  const result = await checkDataDirPairing(sql, config.dataDir, config.databaseUrl);
  if (!result.ok) {
    process.stderr.write([`looptrace: ${result.problem}`, ...pairingRemedies(config.databaseUrl, result.otherDataDir)].join('\n') + '\n');
    return 1;
  }
  printJson({ data_dir: config.dataDir, database, status: result.status });
  return 0;
};

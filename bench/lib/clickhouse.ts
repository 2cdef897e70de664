import { drainPending } from 'chdb';
import { loadConfig } from '../../src/config.js';
import { createClickHouse, type ClickHouseStore } from '../../src/stores/clickhouse.js';
import { looptraceEnv } from './env.js';

/**
 * The project's own ClickHouse store (embedded chDB under `dataDir`, or CLICKHOUSE_URL when set),
 * opened in the bench process. Embedded chDB is one engine per process and locks its directory:
 * open it only while no server uses the same directory, and close it before a server starts.
 */
export async function openClickHouse(dataDir: string): Promise<ClickHouseStore & { closeFully(): Promise<void> }> {
  const ch = await createClickHouse(loadConfig(looptraceEnv(dataDir)));
  return Object.assign(ch, {
    async closeFully() {
      await ch.close();
      // chDB frees its directory only once in-flight work on the connection has finished.
      if (ch.embedded) await drainPending();
    },
  });
}

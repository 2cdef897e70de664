import type { Redis } from 'ioredis';
import { loadConfig, type Config } from './config.js';
import { createClickHouse, type ClickHouseStore } from './stores/clickhouse.js';
import { migrateClickHouse, migratePostgres } from './stores/migrate.js';
import { createPg, ensureDatabase, type Sql } from './stores/pg.js';
import { createRedis } from './stores/redis.js';

export interface Stores {
  config: Config;
  sql: Sql;
  redis: Redis;
  ch: ClickHouseStore;
  close(): Promise<void>;
}

/** Opens every store the process needs; shared by the server, the CLI and the tests. */
export async function openStores(config: Config = loadConfig(), options: { migrate?: boolean } = {}): Promise<Stores> {
  await ensureDatabase(config.databaseUrl);
  const sql = createPg(config.databaseUrl);
  const redis = createRedis(config.redisUrl);
  const ch = await createClickHouse(config);
  if (options.migrate) {
    await migratePostgres(sql);
    await migrateClickHouse(ch, sql);
  }
  return storesOf(config, sql, redis, ch);
}

/** Opened store handles as one `Stores`, closed together (ClickHouse first, Redis last). */
export function storesOf(config: Config, sql: Sql, redis: Redis, ch: ClickHouseStore): Stores {
  return {
    config,
    sql,
    redis,
    ch,
    async close() {
      await ch.close();
      await sql.end({ timeout: 5 });
      redis.disconnect();
    },
  };
}

import type { ClickHouseSettings } from '@clickhouse/client';
import { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { appendAudit } from '../platform/audit/chain.js';
import { Authenticator } from '../platform/auth.js';
import { storesOf, type Stores } from '../runtime.js';
import { buildServices, type Services } from '../services.js';
import { createClickHouse, type ClickHouseStore } from '../stores/clickhouse.js';
import { createPg } from '../stores/pg.js';

/** What every command module receives; commands have the shape of `CliCommand`. */
export interface CliContext {
  services: Services;
  stores: Stores;
}

/** A command module: parses its own arguments (after the command name) and returns an exit code. */
export type CliCommand = (args: string[], ctx: CliContext) => Promise<number>;

/**
 * Opens nothing up front: Postgres connects on the first query, Redis on the first command and
 * ClickHouse on first use. Embedded ClickHouse (chDB) locks its data directory, so a CLI that
 * opened it eagerly could not run `tenants create` next to a running `npm start`; and a usage
 * error should not need any store at all.
 */
export function openCliContext(config: Config): CliContext {
  const sql = createPg(config.databaseUrl, { max: 4 });
  // Not stores/redis.ts: that one connects at construction, and most commands never touch Redis.
  const redis = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2 });
  const ch = lazyClickHouse(config);
  const stores = storesOf(config, sql, redis, ch);
  const services = buildServices({ ...stores, authenticator: new Authenticator(sql, config.auth) });
  return { services, stores };
}

function lazyClickHouse(config: Config): ClickHouseStore {
  let opened: ClickHouseStore | undefined;
  let opening: Promise<ClickHouseStore> | undefined;
  const open = async () => (opened ??= await (opening ??= createClickHouse(config)));
  return {
    get client() {
      if (!opened) throw new Error('ClickHouse opens on first use in the CLI: call rows/insert/command before .client');
      return opened.client;
    },
    database: config.clickhouse.database,
    cluster: config.clickhouse.cluster,
    embedded: !config.clickhouse.url,
    readsFromReplica: config.clickhouse.readUrl !== undefined && config.clickhouse.readUrl !== config.clickhouse.url,
    async rows<T>(name: string, query: string, params?: Record<string, unknown>, settings?: ClickHouseSettings) {
      return (await open()).rows<T>(name, query, params, settings);
    },
    async rowsFromPrimary<T>(name: string, query: string, params?: Record<string, unknown>, settings?: ClickHouseSettings) {
      return (await open()).rowsFromPrimary<T>(name, query, params, settings);
    },
    text: async (name, query, format) => (await open()).text(name, query, format),
    insert: async (table, values, columns) => (await open()).insert(table, values, columns),
    async *stream(query, params, format) {
      yield* (await open()).stream(query, params, format);
    },
    command: async (name, query, params) => (await open()).command(name, query, params),
    rawFromPrimary: async (name, select, format, params, settings, spare) => (await open()).rawFromPrimary(name, select, format, params, settings, spare),
    async close() {
      const store = opened ?? (opening ? await opening.catch(() => undefined) : undefined);
      await store?.close();
    },
  };
}

/**
 * Operator changes made outside the API still belong in the tenant's tamper-evident audit chain.
 * The change is already committed when this runs, so a failed append warns instead of failing.
 */
export async function auditCliAction(
  ctx: CliContext,
  tenantId: string,
  action: string,
  resource: { type: string; id: string },
  details: Record<string, unknown> = {},
): Promise<void> {
  try {
    await appendAudit(ctx.stores.sql, tenantId, {
      actorType: 'system',
      actorId: 'cli',
      action,
      resourceType: resource.type,
      resourceId: resource.id,
      requestId: null,
      details: { via: 'cli', ...details },
    });
  } catch (err) {
    process.stderr.write(`looptrace: warning: audit append for ${action} failed: ${(err as Error).message}\n`);
  }
}

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import type { Config } from '../config.js';
import { observeStoreCall } from '../platform/metrics.js';
import { embeddedStreamer, serverStreamer, type ResultChunk, type StreamFormat } from './clickhouse-stream.js';

export interface ClickHouseStore {
  readonly client: ClickHouseClient;
  readonly database: string;
  readonly cluster: string | undefined;
  readonly embedded: boolean;
  /** Runs a named SELECT and returns its rows; `name` feeds log_comment and metrics. */
  rows<T>(name: string, query: string, params?: Record<string, unknown>, settings?: ClickHouseSettings): Promise<T[]>;
  /** JSONEachRow objects; with `columns`, JSONCompactEachRow arrays in that order (cheaper to encode and parse). */
  insert(table: string, values: readonly object[], columns?: readonly string[]): Promise<void>;
  command(name: string, query: string, params?: Record<string, unknown>): Promise<void>;
  /** A SELECT's result as formatted bytes, pulled chunk by chunk (constant memory for any result size). */
  stream(query: string, params: Record<string, unknown>, format: StreamFormat): AsyncIterable<ResultChunk>;
  close(): Promise<void>;
}

// chDB runs one engine per process, bound to one data path: every store in this process shares it.
let embeddedClient: { client: ClickHouseClient; path: string; users: number } | undefined;

async function openEmbedded(dataDir: string): Promise<ClickHouseClient> {
  const chPath = path.join(dataDir, 'clickhouse');
  if (!embeddedClient) {
    mkdirSync(chPath, { recursive: true });
    const { createChdbConnection } = await import('chdb/connection');
    const client = createClient({ connection: createChdbConnection({ path: chPath }) } as Parameters<typeof createClient>[0]);
    embeddedClient = { client, path: chPath, users: 0 };
  }
  embeddedClient.users += 1;
  return embeddedClient.client;
}

async function releaseEmbedded(): Promise<void> {
  if (!embeddedClient) return;
  embeddedClient.users -= 1;
  if (embeddedClient.users > 0) return;
  const { client } = embeddedClient;
  embeddedClient = undefined;
  await client.close();
}

export async function createClickHouse(config: Config): Promise<ClickHouseStore> {
  const { url, database, user, password, cluster } = config.clickhouse;
  const embedded = !url;
  const client = embedded
    ? await openEmbedded(config.dataDir)
    : createClient({
        url,
        username: user ?? 'default',
        password: password ?? '',
        database,
        request_timeout: 60_000,
        clickhouse_settings: { date_time_input_format: 'best_effort' },
      });
  const streamer = embedded
    ? embeddedStreamer(path.join(config.dataDir, 'clickhouse'), database)
    : serverStreamer(client);
  if (embedded) {
    // The embedded engine has no per-request database; create it and make it the session default.
    await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` });
    await client.command({ query: `USE ${database}` });
  }

  return {
    client,
    database,
    cluster,
    embedded,
    async rows<T>(name: string, query: string, params: Record<string, unknown> = {}, settings: ClickHouseSettings = {}) {
      return observeStoreCall('clickhouse', name, async () => {
        const result = await client.query({
          query,
          query_params: params,
          format: 'JSONEachRow',
          clickhouse_settings: { log_comment: name, ...settings },
        });
        return (await result.json()) as T[];
      });
    },
    async insert(table: string, values: readonly object[], columns?: readonly string[]) {
      if (values.length === 0) return;
      const rows = columns
        ? values.map((row) => columns.map((c) => (row as Record<string, unknown>)[c]))
        : (values as object[]);
      await observeStoreCall('clickhouse', `insert:${table}`, () =>
        client.insert({
          table,
          values: rows,
          format: columns ? 'JSONCompactEachRow' : 'JSONEachRow',
          ...(columns ? { columns: columns as [string, ...string[]] } : {}),
          // A group commit mixes many requests; one request's spread of months must not fail the rest.
          clickhouse_settings: { throw_on_max_partitions_per_insert_block: 0 },
        }),
      );
    },
    async command(name: string, query: string, params: Record<string, unknown> = {}) {
      await observeStoreCall('clickhouse', name, () =>
        client.command({ query, query_params: params, clickhouse_settings: { log_comment: name } }),
      );
    },
    stream: (query, params, format) => streamer.stream(query, params, format),
    async close() {
      await streamer.close();
      if (embedded) await releaseEmbedded();
      else await client.close();
    },
  };
}

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import { pooledChdbClient } from './chdb-pool.js';
import { answerThroughFile } from './clickhouse-outfile.js';
import { ownBytes, type ReleasableBytes, type SpareBuffer } from './reused-buffer.js';
import type { Config } from '../config.js';
import { observeStoreCall } from '../platform/metrics.js';
import { embeddedStreamer, serverStreamer, type ResultChunk, type StreamFormat, type TextFormat } from './clickhouse-stream.js';

/**
 * The one way to ClickHouse. With `CLICKHOUSE_READ_URL` (server mode) there are two servers behind
 * it: `rows` and `stream` read from the read URL (e.g. a load balancer over read replicas, which
 * lag the primary by their replication delay), while `insert`, `command` (DDL, DELETE, mutations,
 * INSERT … SELECT) and `rowsFromPrimary` go to `CLICKHOUSE_URL`. Without it, and embedded, all
 * five go to the same engine. A read whose answer must include what was just written, or that
 * decides a write (the group commit's fold, settlement, watermarks, retention, erasure, worker
 * reads of freshly ingested traces), uses `rowsFromPrimary`: docs/scaling.md lists them.
 */
/** Settings every JSON read shares: numbers as JSON numbers, not the default quoted 64-bit integers. */
export const JSON_NUMBERS = { output_format_json_quote_64bit_integers: 0 } as const;

export interface ClickHouseStore {
  /** The primary's client (CLICKHOUSE_URL, or the embedded engine). */
  readonly client: ClickHouseClient;
  readonly database: string;
  readonly cluster: string | undefined;
  readonly embedded: boolean;
  /** Whether `rows` and `stream` go to another server than writes (CLICKHOUSE_READ_URL is set). */
  readonly readsFromReplica: boolean;
  /** Runs a named SELECT on the read URL and returns its rows; `name` feeds log_comment and metrics. */
  rows<T>(name: string, query: string, params?: Record<string, unknown>, settings?: ClickHouseSettings): Promise<T[]>;
  /** As `rows`, on the primary (CLICKHOUSE_URL): sees every write acknowledged so far. */
  rowsFromPrimary<T>(name: string, query: string, params?: Record<string, unknown>, settings?: ClickHouseSettings): Promise<T[]>;
  /** JSONEachRow objects; with `columns`, JSONCompactEachRow arrays in that order (cheaper to encode and parse). */
  /** A named SELECT's whole answer as text in `format`, from the read URL, on a connection of its own: for bounded answers only. */
  text(name: string, query: string, format: TextFormat): Promise<string>;
  insert(table: string, values: readonly object[], columns?: readonly string[]): Promise<void>;
  command(name: string, query: string, params?: Record<string, unknown>): Promise<void>;
  /**
   * A SELECT's whole answer as `format` bytes from the primary, for answers parsed in place (the
   * trace detail's Native answer). Embedded, the engine writes it to a file read into a buffer reused
   * from query to query (clickhouse-outfile.ts), or into `spare`'s buffers when given; call
   * `release` once the bytes are read.
   */
  rawFromPrimary(name: string, select: string, format: 'Native', params: Record<string, unknown>, settings?: ClickHouseSettings, spare?: SpareBuffer): Promise<ReleasableBytes>;
  /** A SELECT's result as formatted bytes from the read URL, pulled chunk by chunk (constant memory for any result size). */
  stream(query: string, params: Record<string, unknown>, format: StreamFormat): AsyncIterable<ResultChunk>;
  close(): Promise<void>;
}

// chDB runs one engine per process, bound to one data path: every store in this process shares it.
let embeddedClient: { client: ClickHouseClient; path: string; database: string; users: number } | undefined;

function openEmbedded(dataDir: string, database: string): ClickHouseClient {
  const chPath = path.join(dataDir, 'clickhouse');
  if (!embeddedClient) {
    mkdirSync(chPath, { recursive: true });
    embeddedClient = { client: pooledChdbClient(chPath, database), path: chPath, database, users: 0 };
  }
  if (embeddedClient.database !== database) throw new Error(`the embedded ClickHouse of this process serves database ${embeddedClient.database}, not ${database}`);
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

function serverClient(config: Config, url: string): ClickHouseClient {
  const { database, user, password } = config.clickhouse;
  return createClient({
    url,
    username: user ?? 'default',
    password: password ?? '',
    database,
    request_timeout: 60_000,
    clickhouse_settings: { date_time_input_format: 'best_effort' },
  });
}

async function selectRows<T>(client: ClickHouseClient, name: string, query: string, params: Record<string, unknown>, settings: ClickHouseSettings): Promise<T[]> {
  return observeStoreCall('clickhouse', name, async () => {
    const result = await client.query({
      query,
      query_params: params,
      format: 'JSONEachRow',
      clickhouse_settings: { log_comment: name, ...settings },
    });
    return (await result.json()) as T[];
  });
}

export async function createClickHouse(config: Config): Promise<ClickHouseStore> {
  const { url, readUrl, database, cluster } = config.clickhouse;
  const embedded = !url;
  const client = embedded ? openEmbedded(config.dataDir, database) : serverClient(config, url);
  // Same credentials and database as the primary (config.ts refuses a read URL without CLICKHOUSE_URL).
  const reader = !embedded && readUrl && readUrl !== url ? serverClient(config, readUrl) : client;
  const streamer = embedded
    ? embeddedStreamer(path.join(config.dataDir, 'clickhouse'), database)
    : serverStreamer(reader);
  // The embedded engine's connections create the database and make it their default (chdb-pool.ts).
  if (embedded) await client.command({ query: 'SELECT 1' });

  return {
    client,
    database,
    cluster,
    embedded,
    readsFromReplica: reader !== client,
    rows: <T>(name: string, query: string, params: Record<string, unknown> = {}, settings: ClickHouseSettings = {}) =>
      selectRows<T>(reader, name, query, params, settings),
    rowsFromPrimary: <T>(name: string, query: string, params: Record<string, unknown> = {}, settings: ClickHouseSettings = {}) =>
      selectRows<T>(client, name, query, params, settings),
    text: (name: string, query: string, format: TextFormat) => observeStoreCall('clickhouse', name, () => streamer.text(query, format)),
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
    rawFromPrimary: (name, select, format, params, settings = {}, spare) =>
      observeStoreCall('clickhouse', name, async () => {
        const run = async (query: string) => {
          const { stream } = await client.exec({ query, query_params: params, clickhouse_settings: settings });
          return (await stream.toArray()) as Buffer[];
        };
        if (embedded) {
          const throughFile = await answerThroughFile((file) => run(`${select} INTO OUTFILE ${file} FORMAT ${format}`), spare).catch(() => undefined);
          if (throughFile) return throughFile;
        }
        const parts = await run(`${select} FORMAT ${format}`);
        return ownBytes(parts.length === 1 ? parts[0]! : Buffer.concat(parts)); // the embedded engine answers in one part: no copy
      }),
    stream: (query, params, format) => streamer.stream(query, params, format),
    async close() {
      await streamer.close();
      if (embedded) await releaseEmbedded();
      else await Promise.all([client.close(), reader === client ? undefined : reader.close()]);
    },
  };
}

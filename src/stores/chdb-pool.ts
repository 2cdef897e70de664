import { createClient, type ClickHouseClient } from '@clickhouse/client';

type Call = 'query' | 'exec' | 'command' | 'insert';
const CALLS: ReadonlySet<string | symbol> = new Set<Call>(['query', 'exec', 'command', 'insert']);

/**
 * The embedded engine as one ClickHouseClient whose every call runs alone on a chDB connection
 * taken from a pool, given back once the call has succeeded. A connection whose call failed is
 * closed and never used again: after a query fails part-way, chDB hands the output it had
 * formatted to the next query of the same connection (chdb 3.4.0: 32 MB of a JSONEachRow answer
 * that failed at its 200,000th row arrived in front of the next query's one row). On a shared
 * connection that next query could be another tenant's read. A connection opens in about 4 ms.
 *
 * The chDB connection materializes each answer before the call resolves (its `exec` stream reads
 * a buffer), so a connection is free again when its call's promise settles.
 */
export function pooledChdbClient(chPath: string, database: string): ClickHouseClient {
  const idle: ClickHouseClient[] = [];
  let closed = false;
  let created = false;
  const open = async (): Promise<ClickHouseClient> => {
    const { createChdbConnection } = await import('chdb/connection');
    const client = createClient({ connection: createChdbConnection({ path: chPath }) } as Parameters<typeof createClient>[0]);
    try {
      if (!created) await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` }); // database: an identifier checked by config
      created = true;
      await client.command({ query: `USE ${database}` });
    } catch (err) {
      await client.close();
      throw err;
    }
    return client;
  };
  const run = async (call: Call, args: unknown[]): Promise<unknown> => {
    if (closed) throw new Error('the embedded ClickHouse client is closed');
    const client = idle.pop() ?? (await open());
    let result: unknown;
    try {
      result = await (client[call] as (...a: unknown[]) => Promise<unknown>).apply(client, args);
    } catch (err) {
      await client.close();
      throw err;
    }
    if (closed) await client.close();
    else idle.push(client);
    return result;
  };
  return new Proxy({} as ClickHouseClient, {
    get(_target, prop) {
      if (CALLS.has(prop)) return (...args: unknown[]) => run(prop as Call, args);
      if (prop === 'close') {
        return async () => {
          closed = true;
          await Promise.all(idle.splice(0).map((client) => client.close()));
        };
      }
      return undefined; // nothing else of ClickHouseClient is used here
    },
  });
}

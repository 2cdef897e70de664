import postgres from 'postgres';

export type Sql = postgres.Sql<Record<string, never>>;
export type TxSql = postgres.TransactionSql<Record<string, never>>;

export function createPg(url: string, options: { max?: number } = {}): Sql {
  return postgres(url, {
    max: options.max ?? 20,
    idle_timeout: 30,
    // Seconds. A Postgres that refuses connections fails a query at once; one that does not answer
    // (host down, packets dropped) fails it after this, so a request never waits longer to get its 503.
    connect_timeout: 3,
    onnotice: () => {},
    // Dates come back as JS Dates; bigint counters as JS numbers (sequences stay far below 2^53).
    types: {
      bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
    },
    transform: { undefined: null },
  }) as unknown as Sql;
}

/** Creates the database named in `url` if it does not exist (used by migrate and tests). */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`unsupported database name: ${name}`);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  try {
    const rows = await sql`select 1 from pg_database where datname = ${name}`;
    if (rows.length === 0) {
      await sql.unsafe(`create database "${name}"`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // created concurrently by another process
      });
    }
  } finally {
    await sql.end();
  }
}

import '../helpers/database.js';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratePostgres } from '../../src/stores/migrate.js';
import { createPg, ensureDatabase, type Sql } from '../../src/stores/pg.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Every Postgres trigger, the function it runs, the migration that holds its body, and the source
 * files whose behaviour depends on it (each must name the trigger and that migration in a comment,
 * so a reader of the code finds the hop). A trigger that a migration adds, drops or renames must be
 * changed here too.
 */
const TRIGGERS = [
  {
    name: 'queue_readable_traces_for_rules_on_insert',
    table: 'trace_registry',
    fn: 'queue_readable_traces_for_rules',
    migration: 'sql/009_failures.sql',
    reliedOnBy: [
      'src/modules/ingest/registry-repo.ts',
      'src/stores/trace-outbox.ts',
      'src/modules/evals/online.ts',
      'src/modules/failures/detector.ts',
    ],
  },
  {
    name: 'queue_readable_traces_for_rules_on_update',
    table: 'trace_registry',
    fn: 'queue_readable_traces_for_rules',
    migration: 'sql/009_failures.sql',
    reliedOnBy: [
      'src/modules/ingest/registry-repo.ts',
      'src/modules/ingest/otlp/state-repo.ts',
      'src/stores/trace-outbox.ts',
      'src/modules/evals/online.ts',
      'src/modules/failures/detector.ts',
    ],
  },
] as const;

/** Names in a comment may be shortened as `<stem>_on_insert/_on_update`. */
function mentions(text: string, trigger: string): boolean {
  if (text.includes(trigger)) return true;
  const m = /^(.*)(_on_[a-z]+)$/.exec(trigger);
  return m !== null && new RegExp(`${m[1]}_on_[a-z]+(?:/_on_[a-z]+)*/${m[2]}\\b`).test(text);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

describe('database triggers', () => {
  let sql: Sql;
  let dbName: string;
  beforeAll(async () => {
    const url = new URL(process.env.DATABASE_URL!);
    dbName = `looptrace_triggers_${process.pid}`;
    url.pathname = `/${dbName}`;
    await ensureDatabase(url.toString());
    sql = createPg(url.toString(), { max: 2 }); // the migrator holds one connection for its lock
    await migratePostgres(sql);
  });
  afterAll(async () => {
    await sql?.end();
    const maintenance = new URL(process.env.DATABASE_URL!);
    maintenance.pathname = '/postgres';
    const admin = createPg(maintenance.toString(), { max: 1 });
    await admin.unsafe(`drop database if exists ${dbName}`);
    await admin.end();
  });

  it('a fresh database has exactly the triggers the code relies on, on their tables, running their functions', async () => {
    const rows = await sql<{ name: string; table: string; fn: string }[]>`
      select t.tgname as name, c.relname as table, p.proname as fn
      from pg_trigger t
      join pg_class c on c.oid = t.tgrelid
      join pg_namespace n on n.oid = c.relnamespace
      join pg_proc p on p.oid = t.tgfoid
      where not t.tgisinternal and n.nspname = current_schema()
      order by t.tgname`;
    expect(rows).toEqual(TRIGGERS.map(({ name, table, fn }) => ({ name, table, fn })).sort((a, b) => a.name.localeCompare(b.name)));
  });

  it('the renaming migration is idempotent', async () => {
    await sql.unsafe(readFileSync(path.join(ROOT, 'sql/024_trigger_names.sql'), 'utf8'));
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from pg_trigger where not tgisinternal`;
    expect(row!.n).toBe(TRIGGERS.length);
  });

  it('the code that relies on a trigger names it and the migration that holds its body', () => {
    for (const t of TRIGGERS) {
      expect(existsSync(path.join(ROOT, t.migration)), `${t.migration} exists`).toBe(true);
      for (const file of t.reliedOnBy) {
        expect(existsSync(path.join(ROOT, file)), `${file} exists (moved? update reliedOnBy above)`).toBe(true);
        const text = readFileSync(path.join(ROOT, file), 'utf8');
        expect(mentions(text, t.name), `${file} should name the trigger ${t.name}`).toBe(true);
        expect(text.includes(t.migration), `${file} should point to ${t.migration}`).toBe(true);
      }
    }
  });

  it('no source file names a trigger or trigger function that is gone', () => {
    const gone = ['trace_registry_candidates_insert', 'trace_registry_candidates_update', 'stored_trace_candidates', 'eval_candidates_from_registry', "sql/009's trigger"];
    const stale = sourceFiles('src').flatMap((file) => {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      return gone.filter((name) => text.includes(name)).map((name) => `${file}: ${name}`);
    });
    expect(stale).toEqual([]);
  });
});

import '../helpers/database.js';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { checkDataDirPairing, PAIRING_FILE } from '../../src/stores/data-dir.js';
import { createPg, ensureDatabase, type Sql } from '../../src/stores/pg.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const opened: Sql[] = [];
const created: string[] = [];
let counter = 0;

/** A new, empty database named after this process's (so that a left-over one is dropped by the global setup). */
async function freshDatabase(): Promise<{ url: string; sql: Sql }> {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `${url.pathname}_pair${++counter}`;
  await ensureDatabase(url.toString());
  created.push(decodeURIComponent(url.pathname.slice(1)));
  const sql = createPg(url.toString(), { max: 2 });
  opened.push(sql);
  return { url: url.toString(), sql };
}

const dirs: string[] = [];
const freshDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'looptrace-pairing-'));
  dirs.push(dir);
  return dir;
};

afterAll(async () => {
  await Promise.all(opened.map((sql) => sql.end()));
  const admin = new URL(process.env.DATABASE_URL!);
  admin.pathname = '/postgres';
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  for (const name of created) await sql.unsafe(`drop database if exists "${name}"`);
  await sql.end();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('pairing LOOPTRACE_DATA_DIR with its Postgres database', () => {
  it('pairs a new database with a new directory, and matches them afterwards', async () => {
    const db = await freshDatabase();
    const dir = freshDir();
    const first = await checkDataDirPairing(db.sql, dir, db.url);
    expect(first).toMatchObject({ ok: true, status: 'paired' });
    const file = JSON.parse(readFileSync(path.join(dir, PAIRING_FILE), 'utf8'));
    const [row] = await db.sql<{ id: string; data_dir: string }[]>`select id, data_dir from data_dir_pairing`;
    expect(row).toEqual({ id: file.id, data_dir: dir });
    expect(first.ok && first.id).toBe(file.id);
    expect(await checkDataDirPairing(db.sql, dir, db.url)).toEqual({ ok: true, status: 'matched', id: file.id });
  });

  it('refuses a new directory next to a paired database (a fresh clone on an older clone’s database), writing nothing', async () => {
    const db = await freshDatabase();
    const old = freshDir();
    await checkDataDirPairing(db.sql, old, db.url);
    const clone = freshDir();
    const refused = await checkDataDirPairing(db.sql, clone, db.url);
    expect(refused).toEqual({ ok: false, problem: expect.stringContaining(`paired with ${old} on `), otherDataDir: old });
    expect(!refused.ok && refused.problem).toContain(`this data directory, ${clone}, is new to it`);
    expect(existsSync(path.join(clone, PAIRING_FILE))).toBe(false);
    // Nor is the old pair disturbed.
    expect(await checkDataDirPairing(db.sql, old, db.url)).toMatchObject({ ok: true, status: 'matched' });
  });

  it('refuses a directory paired with another database', async () => {
    const [a, b] = [await freshDatabase(), await freshDatabase()];
    const [dirA, dirB] = [freshDir(), freshDir()];
    await checkDataDirPairing(a.sql, dirA, a.url);
    await checkDataDirPairing(b.sql, dirB, b.url);
    const refused = await checkDataDirPairing(a.sql, dirB, a.url);
    expect(!refused.ok && refused.problem).toContain(`this data directory, ${dirB}, was paired with another database`);
  });

  it('adopts a database from before pairing only where it fits: no tenants, or a directory with ClickHouse data', async () => {
    const db = await freshDatabase();
    await db.sql`create table tenants (id uuid primary key)`;
    await db.sql`insert into tenants values (gen_random_uuid())`;
    const empty = freshDir();
    const refused = await checkDataDirPairing(db.sql, empty, db.url);
    expect(refused).toEqual({ ok: false, problem: expect.stringContaining(`holds 1 tenant(s), but this data directory, ${empty}, has no ClickHouse data`), otherDataDir: null });
    expect(existsSync(path.join(empty, PAIRING_FILE))).toBe(false);

    const used = freshDir();
    mkdirSync(path.join(used, 'clickhouse'));
    writeFileSync(path.join(used, 'clickhouse', 'status'), 'x');
    expect(await checkDataDirPairing(db.sql, used, db.url)).toMatchObject({ ok: true, status: 'paired' });
    expect(await checkDataDirPairing(db.sql, empty, db.url)).toMatchObject({ ok: false });

    // A directory paired before, next to a new database without tenants (the database was dropped to start afresh).
    const renewed = await freshDatabase();
    expect(await checkDataDirPairing(renewed.sql, used, renewed.url)).toMatchObject({ ok: true, status: 'paired' });
    expect(await checkDataDirPairing(renewed.sql, used, renewed.url)).toMatchObject({ ok: true, status: 'matched' });
  });

  it('`looptrace data-dir check` exits 1 on a mismatch, saying what to do', async () => {
    const db = await freshDatabase();
    const old = freshDir();
    await checkDataDirPairing(db.sql, old, db.url);
    const clone = freshDir();
    const run = (dataDir: string) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          ['--import', 'tsx', 'src/cli.ts', 'data-dir', 'check'],
          { cwd: ROOT, env: { ...process.env, DATABASE_URL: db.url, LOOPTRACE_DATA_DIR: dataDir }, timeout: 60_000 },
          (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
        );
      });
    const refused = await run(clone);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    const name = new URL(db.url).pathname.slice(1);
    expect(refused.stderr).toContain(`looptrace: the Postgres database ${db.url} belongs with another data directory`);
    expect(refused.stderr).toContain(`LOOPTRACE_DATA_DIR=${old}`);
    expect(refused.stderr).toContain(`DATABASE_URL=${db.url.replace(name, `${name}_2`)}`);
    expect(refused.stderr).toContain(`-c 'DROP DATABASE ${name}'`);
    const matched = await run(old);
    expect([matched.code, JSON.parse(matched.stdout)]).toEqual([0, { data_dir: old, database: db.url, status: 'matched' }]);
  });
});

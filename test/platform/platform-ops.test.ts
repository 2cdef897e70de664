import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, REDACTED_LOG_PATHS, type App } from '../../src/app.js';
import { migratePostgres } from '../../src/stores/migrate.js';
import { createPg, ensureDatabase } from '../../src/stores/pg.js';
import { createTenant, startApp, type TestContext } from '../helpers/app.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

describe('migrations', () => {
  it('two processes migrating a fresh database at once apply every migration exactly once', async () => {
    const base = new URL(process.env.DATABASE_URL!);
    base.pathname = `/looptrace_migrate_${process.pid}`;
    const url = base.toString();
    await ensureDatabase(url);
    const [a, b] = [createPg(url, { max: 2 }), createPg(url, { max: 2 })];
    try {
      const [first, second] = await Promise.all([migratePostgres(a), migratePostgres(b)]);
      const applied = [...first, ...second];
      expect(applied.length).toBeGreaterThan(0);
      expect(new Set(applied).size).toBe(applied.length);
      expect([first.length, second.length].sort()).toEqual([0, applied.length]);
      const [row] = await a<{ n: number }[]>`select count(*)::int as n from schema_migrations`;
      expect(row!.n).toBe(applied.length);
      expect(await migratePostgres(a)).toEqual([]);
    } finally {
      await a.end();
      await b.end();
      const admin = createPg(process.env.DATABASE_URL!, { max: 1 });
      await admin.unsafe(`drop database if exists looptrace_migrate_${process.pid}`);
      await admin.end();
    }
  });
});

describe('logs', () => {
  let app: App;
  let lines: string[];
  beforeAll(async () => {
    lines = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    app = await buildApp({ ...ctx.stores, logger: { level: 'info', redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' }, stream } });
    await app.ready();
  });
  afterAll(async () => app?.close());

  it('never contain API keys, secrets or bearer tokens', async () => {
    const t = await createTenant(app);
    const created = await app.inject({ method: 'POST', url: '/v1/apikeys', headers: t.auth, payload: { name: 'logged?' } });
    expect(created.statusCode).toBe(201);
    await app.inject({ method: 'GET', url: '/v1/projects', headers: { authorization: `Bearer ${created.json().secret}` } });
    await app.inject({ method: 'GET', url: '/v1/projects', headers: { authorization: 'Bearer lt_not-a-real-key' } });
    // What a handler might log by mistake is censored by path.
    app.log.info({ req: { headers: { authorization: `Bearer ${t.apiKey}` } }, body: { secret: 'webhook-secret-123456', api_key: t.apiKey } }, 'probe');
    const text = lines.join('');
    expect(text).toContain('[redacted]');
    for (const secret of [t.apiKey, created.json().secret, 'lt_not-a-real-key', 'webhook-secret-123456']) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('request completed');
    // Log lines carry the same request id as the response header, under the same name.
    const completed = lines.map((l) => JSON.parse(l) as { msg?: string; request_id?: string }).find((l) => l.msg === 'request completed');
    expect(completed?.request_id).toMatch(/^[0-9a-f-]{36}$/);
  });
});

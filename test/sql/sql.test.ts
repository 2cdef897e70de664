import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricsDirtyTracker } from '../../src/modules/metrics/dirty.js';
import { metricsRepository } from '../../src/modules/metrics/repo.js';
import { MetricsRollup } from '../../src/modules/metrics/rollup.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { queryKeyAuth } from '../builders/resources.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { ingestTraces } from '../helpers/trace-api.js';

let ctx: TestContext;
let mine: TestTenant;
let theirs: TestTenant;
const MY_MARK = 'mymarker';
const THEIR_MARK = 'theirsecret';
const myTrace = aTrace({
  name: `checkout ${MY_MARK}`,
  input: 'question',
  output: 'answer',
  spans: [aSpan({ name: 'retrieve', type: 'tool', input: `lookup ${MY_MARK}` }), aSpan({ name: 'generate', type: 'llm', model: 'gpt-4o', prompt_tokens: 11, completion_tokens: 7, cost: 0.25 })],
});
const theirTrace = aTrace({ name: `checkout ${THEIR_MARK}`, spans: [aSpan({ name: `step ${THEIR_MARK}`, input: THEIR_MARK })] });

beforeAll(async () => {
  ctx = await startApp();
  mine = await createTenant(ctx.app, 'pro');
  theirs = await createTenant(ctx.app, 'pro');
  await ingestTraces(ctx.app, mine, [myTrace]);
  await ingestTraces(ctx.app, theirs, [theirTrace]);
  // Only this file's tenants: the dirty set is shared by every test process (see test/metrics).
  const tracker = new MetricsDirtyTracker(ctx.stores.sql, { tenantIds: [mine.tenantId, theirs.tenantId] });
  await new MetricsRollup(metricsRepository(ctx.stores.ch), tracker).processDue();
});
afterAll(async () => ctx?.close());

const runSql = (tenant: Pick<TestTenant, 'auth'>, query: string, format?: string) =>
  ctx.app.inject({ method: 'POST', url: '/v1/sql', headers: tenant.auth, payload: { query, ...(format ? { format } : {}) } });

async function rowsOf(query: string) {
  const res = await runSql(mine, query);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { columns: { name: string; type: string }[]; rows: unknown[][]; rows_read: number; elapsed_ms: number; truncated: boolean };
}

describe('POST /v1/sql', () => {
  it("answers the tenant's own rows with the API's column names, typed", async () => {
    const answer = await rowsOf(`SELECT id, name, type, model, prompt_tokens, cost, start_time FROM spans WHERE trace_id = '${myTrace.id}' ORDER BY name`);
    expect(answer.columns.map((c) => c.name)).toEqual(['id', 'name', 'type', 'model', 'prompt_tokens', 'cost', 'start_time']);
    expect(answer.columns.find((c) => c.name === 'prompt_tokens')?.type).toBe('UInt64');
    expect(answer.rows).toHaveLength(2);
    const generate = answer.rows.find((r) => r[1] === 'generate')!;
    expect(generate.slice(2, 6)).toEqual(['llm', 'gpt-4o', 11, 0.25]);
    expect(generate[6]).toMatch(/^2026-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$/);
    expect(answer.rows_read).toBeGreaterThan(0);
    expect(answer.truncated).toBe(false);

    const joined = await rowsOf('SELECT t.name, count() AS spans FROM traces AS t JOIN spans AS s ON s.trace_id = t.id GROUP BY t.name');
    expect(joined.rows).toEqual([[`checkout ${MY_MARK}`, 2]]);
  });

  it('reads the metrics rollup, and cuts a long answer at the row limit with truncated: true', async () => {
    const metrics = await rowsOf('SELECT sum(trace_count) FROM metrics_1m');
    expect(metrics.rows).toEqual([[1]]);
    const long = await rowsOf('SELECT arrayJoin(range(10005)) AS n');
    expect(long.rows).toHaveLength(10_000);
    expect(long.truncated).toBe(true);
  });

  it('answers CSV with a header, and Parquet that a Parquet reader reads back as the same rows', async () => {
    const query = `SELECT name, prompt_tokens, cost FROM spans ORDER BY name`;
    const json = await rowsOf(query);
    const csv = await runSql(mine, query, 'csv');
    expect(csv.statusCode, csv.body).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    expect(csv.body.trim().split('\n')).toEqual(['"name","prompt_tokens","cost"', ...json.rows.map((r) => `"${String(r[0])}",${String(r[1])},${String(r[2])}`)]);
    // An answer in several blocks (each UNION branch is one): one header line still.
    const many = await runSql(mine, 'SELECT 1 AS n UNION ALL SELECT 2 UNION ALL SELECT 3', 'csv');
    expect(many.body.trim().split('\n').sort()).toEqual(['"n"', '1', '2', '3']);
    const parquet = await runSql(mine, query, 'parquet');
    expect(parquet.statusCode).toBe(200);
    const bytes = parquet.rawPayload;
    const rows = await parquetReadObjects({ file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer });
    expect(rows.map((r) => [r.name, Number(r.prompt_tokens), r.cost])).toEqual(json.rows);
    const empty = await runSql(mine, `${query} LIMIT 0`, 'parquet');
    const emptyBytes = empty.rawPayload;
    expect(await parquetReadObjects({ file: emptyBytes.buffer.slice(emptyBytes.byteOffset, emptyBytes.byteOffset + emptyBytes.byteLength) as ArrayBuffer })).toEqual([]);
  });

  it('is open to query-scoped keys and viewers, Pro and above, and audited', async () => {
    expect((await runSql({ auth: await queryKeyAuth(ctx.app, mine.auth) }, 'SELECT 1')).statusCode).toBe(200);
    expect((await runSql({ auth: bearer(await sessionToken(mine.tenantId, 'viewer')) }, 'SELECT 1')).statusCode).toBe(200);
    const starter = await createTenant(ctx.app, 'starter');
    const refused = await runSql(starter, 'SELECT 1');
    expect(refused.statusCode).toBe(402);
    expect(refused.json().code).toBe('plan_upgrade_required');

    await runSql(mine, `SELECT count() FROM spans /* audited ${MY_MARK} */`);
    const log = await ctx.app.inject({ method: 'GET', url: '/v1/audit-log?limit=100', headers: bearer(await sessionToken(mine.tenantId, 'owner')) });
    const entry = log.json().entries.find((e: { action: string; details: { query?: string } }) => e.action === 'sql.query' && e.details.query?.includes(`audited ${MY_MARK}`));
    expect(entry?.details).toMatchObject({ format: 'json', rows: 1, truncated: false });
  });

  it('names what the engine found wrong, and the bounds it hit, as 400s', async () => {
    const unknownColumn = await runSql(mine, 'SELECT no_such_column FROM spans');
    expect(unknownColumn.statusCode).toBe(400);
    expect(unknownColumn.json()).toMatchObject({ code: 'sql.invalid_query' });
    expect(unknownColumn.json().error).toContain('no_such_column');
    const syntax = await runSql(mine, 'SELEC 1');
    expect(syntax.json()).toMatchObject({ code: 'sql.invalid_query' });
    const tooLong = await runSql(mine, `SELECT 1 ${' '.repeat(20_000)}`);
    expect(tooLong.json()).toMatchObject({ code: 'sql.query_too_long' });
    // 10^13 rows of a cross join: the execution time bound stops it.
    const slow = await runSql(mine, 'SELECT count() FROM (SELECT arrayJoin(range(100000)) AS a) AS x, (SELECT arrayJoin(range(100000)) AS b) AS y, (SELECT arrayJoin(range(1000)) AS c) AS z');
    expect(slow.statusCode, slow.body).toBe(400);
    expect(slow.json()).toMatchObject({ code: 'sql.limit_exceeded' });
  });

  it('hands no output of a query that failed part-way to the next query', async () => {
    const midway = await runSql(mine, "SELECT n, throwIf(n = 150000, 'stop here') AS t FROM (SELECT arrayJoin(range(300000)) AS n)");
    expect(midway.json()).toMatchObject({ code: 'sql.invalid_query' });
    expect(midway.json().error).toContain('stop here');
    expect((await rowsOf('SELECT 42 AS answer')).rows).toEqual([[42]]);
  });

  it("refuses a tenant's query beyond its concurrent maximum with 429 and Retry-After", async () => {
    const key = `${ctx.stores.config.redisPrefix}:sql:running:${mine.tenantId}`;
    await ctx.stores.redis.set(key, '2', 'PX', 10_000);
    try {
      const busy = await runSql(mine, 'SELECT 1');
      expect(busy.statusCode, busy.body).toBe(429);
      expect(busy.json().code).toBe('sql.too_many_queries');
      expect(busy.headers['retry-after']).toBe('1');
    } finally {
      await ctx.stores.redis.del(key);
    }
    expect((await runSql(mine, 'SELECT 1')).statusCode).toBe(200);
  });
});

describe("POST /v1/sql never reads another tenant's rows", () => {
  const db = () => ctx.stores.ch.database;
  // Every way into other rows the engine offers; each must be refused or find only the caller's rows.
  const attacks = (): string[] => [
    `SELECT * FROM ${db()}.spans`,
    `SELECT * FROM \`${db()}\`.\`spans\``,
    `SELECT * FROM "${db()}"."traces"`,
    `sElEcT * FrOm /* comment */ ${db().toUpperCase()}.SPANS`,
    'SELECT * FROM system.tables',
    'SELECT * FROM SYSTEM.ONE',
    'SELECT * FROM system.query_log',
    'SELECT (SELECT count() FROM system.tables)',
    'SELECT * FROM default.spans',
    'SELECT * FROM schema_migrations',
    'SELECT * FROM span_vectors',
    'SELECT * FROM trace_metrics_1m',
    `SELECT * FROM remote('127.0.0.1', ${db()}.spans)`,
    `SELECT * FROM merge('${db()}', '.*')`,
    `SELECT * FROM view(SELECT * FROM ${db()}.spans)`,
    "SELECT * FROM file('/etc/passwd', 'LineAsString')",
    "SELECT * FROM url('http://127.0.0.1:1/', 'LineAsString')",
    "SELECT * FROM s3('http://127.0.0.1:1/x', 'CSV')",
    `SELECT * FROM clusterAllReplicas('default', ${db()}.spans)`,
    'SELECT * FROM numbers(10)',
    `SELECT * FROM spans UNION ALL SELECT * FROM ${db()}.spans`,
    `SELECT name FROM spans WHERE trace_id IN (SELECT trace_id FROM ${db()}.spans)`,
    `SELECT name FROM spans WHERE trace_id IN ${db()}.spans`,
    'SELECT name FROM spans WHERE name IN system.tables',
    `WITH leak AS (SELECT * FROM ${db()}.spans) SELECT * FROM leak`,
    `SELECT * FROM spans AS s JOIN ${db()}.spans AS o ON 1 = 1`,
    `SELECT * FROM spans WHERE tenant_id != '${mine.tenantId}'`,
    `SELECT * FROM spans WHERE tenant_id = '${theirs.tenantId}'`,
    `SELECT * FROM traces WHERE id = '${theirTrace.id}'`,
    'SELECT * FROM spans SETTINGS additional_table_filters = {}',
    'SELECT * FROM (SELECT * FROM spans SETTINGS additional_table_filters = {})',
    `SELECT * FROM (SELECT * FROM ${db()}.spans SETTINGS additional_table_filters = {}, readonly = 0)`,
    'SELECT * FROM spans SETTINGS readonly = 0',
    `SELECT 1; SELECT * FROM ${db()}.spans`,
    `SELECT 1 -- ; \nUNION ALL SELECT name FROM ${db()}.spans`,
    `SELECT $$;$$ FROM ${db()}.spans`,
    `SELECT * FROM spans INTO OUTFILE '/tmp/looptrace-sql-leak'`,
    'SELECT * FROM spans FORMAT JSON',
    `INSERT INTO ${db()}.spans (name) VALUES ('x')`,
    'DROP TABLE spans',
    'SHOW TABLES',
    'DESCRIBE TABLE spans',
    'EXPLAIN SELECT 1',
    'SET readonly = 0',
    'SYSTEM FLUSH LOGS',
    `OPTIMIZE TABLE ${db()}.spans`,
    "SELECT dictGet('x', 'y', 1)",
    `SELECT joinGet('${db()}.spans', 'name', 1)`,
    "SELECT getSetting('additional_table_filters')",
    `SELECT hasColumnInTable('${db()}', 'spans', 'input')`,
    `SELECT arrayMap(x -> (SELECT count() FROM ${db()}.spans), [1])`,
    `SELECT * FROM spans WHERE EXISTS (SELECT 1 FROM ${db()}.spans WHERE name LIKE '%${THEIR_MARK}%')`,
    `SELECT {tenant:String}`,
    `SELECT 1 ${'UNION ALL SELECT 1 '.repeat(1_200)}`,
    `SELECT ${'('.repeat(3_000)}1${')'.repeat(3_000)}`,
    `SELECT name FROM spans ${`/* ${'x'.repeat(19_000)} */`} UNION ALL SELECT name FROM ${db()}.spans`,
    `SELECT * FROM ${db()}.spans`.replace('spans', 'sp\u0000ans'),
  ];

  it('refuses each attempt or answers only the caller\'s rows', async () => {
    for (const query of attacks()) {
      const res = await runSql(mine, query);
      const outcome = `${query.slice(0, 120)} → ${res.statusCode} ${res.body.slice(0, 300)}`;
      expect([200, 400], outcome).toContain(res.statusCode);
      expect(res.body, outcome).not.toContain(THEIR_MARK);
      expect(res.body, outcome).not.toContain(theirs.tenantId);
      expect(res.body, outcome).not.toContain(theirTrace.id);
      if (res.statusCode === 400) expect(['sql.refused', 'sql.invalid_query', 'sql.query_too_long', 'bad_request'], outcome).toContain(res.json().code);
    }
  });

  it('says why: other databases and tables, table functions, settings, statements other than SELECT', async () => {
    const reason = async (query: string) => {
      const res = await runSql(mine, query);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().code).toBe('sql.refused');
      return res.json().reason as string;
    };
    expect(await reason('SELECT * FROM system.tables')).toMatch(/not system\.tables/);
    expect(await reason('SELECT * FROM schema_migrations')).toMatch(/not schema_migrations/);
    expect(await reason("SELECT * FROM file('/etc/passwd')")).toMatch(/table functions such as file/);
    expect(await reason('SELECT * FROM spans SETTINGS max_execution_time = 1000')).toMatch(/SETTINGS/);
    expect(await reason('SELECT 1; SELECT 2')).toMatch(/one statement/);
    expect(await reason('DROP TABLE spans')).toMatch(/only a SELECT/);
    expect(await reason("SELECT 1 INTO OUTFILE '/tmp/x'")).toMatch(/INTO OUTFILE/);
    expect(await reason('SELECT name FROM spans WHERE name IN system.tables')).toMatch(/IN \(SELECT/);
    expect(await reason("SELECT dictGet('d', 'a', 1)")).toMatch(/dictGet/);
    // The trailing semicolon of a pasted query is fine.
    expect((await runSql(mine, 'SELECT 1;  ')).statusCode).toBe(200);
  });

  it("still finds the other tenant's trace through the API as that tenant (the data is there)", async () => {
    const res = await runSql(theirs, `SELECT name FROM spans WHERE input = '${THEIR_MARK}'`);
    expect(res.json().rows).toEqual([[`step ${THEIR_MARK}`]]);
  });
});

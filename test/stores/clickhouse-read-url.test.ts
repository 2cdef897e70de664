import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { otlpRepository } from '../../src/modules/ingest/otlp/repo.js';
import { storedTraceRepository } from '../../src/modules/ingest/stored-repo.js';
import { traceRepository } from '../../src/modules/traces/repo.js';
import { TraceService } from '../../src/modules/traces/service.js';
import { createClickHouse, type ClickHouseStore } from '../../src/stores/clickhouse.js';
import { migrateClickHouse } from '../../src/stores/migrate.js';
import type { Sql } from '../../src/stores/pg.js';

/**
 * CLICKHOUSE_READ_URL: reads (`rows`, `stream`) go to the read URL, and everything else (inserts,
 * commands, migrations, `rowsFromPrimary` and the repositories' primary-consistent reads) to
 * CLICKHOUSE_URL. Two local HTTP servers speak as much of ClickHouse's HTTP interface as
 * @clickhouse/client needs and record what each was asked; no ClickHouse runs here.
 */

interface Recorded {
  /** The statement: the `query` URL parameter (inserts) or the body (queries, commands). */
  query: string;
  logComment: string | null;
  /** An insert's rows, as sent. */
  data: string | null;
  authorization: string | undefined;
  database: string | null;
}

/** Rows a fake answers with, by log_comment (every SELECT without an entry answers no rows). */
type Answers = Record<string, object[]>;

class FakeClickHouse {
  readonly requests: Recorded[] = [];
  answers: Answers = {};
  private server: Server | undefined;

  constructor(readonly role: string) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** What was asked, in order: a statement's log_comment, `insert:<table>`, or else the statement itself. */
  seen(): string[] {
    return this.requests.map((r) => {
      const insert = /^INSERT INTO (\S+)/i.exec(r.query);
      return r.logComment?.split(' ')[0] ?? (insert ? `insert:${insert[1]}` : r.query.trim());
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname === '/ping') {
      res.end('Ok.\n');
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const inURL = url.searchParams.get('query');
    const query = inURL ?? body;
    const logComment = url.searchParams.get('log_comment');
    this.requests.push({ query, logComment, data: inURL ? body : null, authorization: req.headers.authorization, database: url.searchParams.get('database') });
    res.setHeader('X-ClickHouse-Server-Display-Name', this.role);
    if (/^\s*(SELECT|WITH)\b/i.test(query)) {
      const rows = (logComment && this.answers[logComment.split(' ')[0]!]) || (/^\s*SELECT 1\b/i.test(query) ? [{ '1': 1 }] : []);
      res.setHeader('Content-Type', 'application/x-ndjson; charset=UTF-8');
      res.end(rows.map((r) => JSON.stringify(r) + '\n').join(''));
      return;
    }
    res.end(); // INSERT, CREATE, ALTER, DELETE: 200 with an empty body, as ClickHouse answers them
  }
}

const TENANT = '11111111-1111-4111-8111-111111111111';
const PROJECT = '22222222-2222-4222-8222-222222222222';
const TRACE = '33333333-3333-4333-8333-333333333333';
const SPAN = '00000000-0000-0000-b7ad-6b7169203331';

const primary = new FakeClickHouse('primary');
const replica = new FakeClickHouse('replica');
let dataDir: string;
let env: NodeJS.ProcessEnv;
let ch: ClickHouseStore;

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'looptrace-read-url-'));
  const [primaryUrl, replicaUrl] = await Promise.all([primary.start(), replica.start()]);
  env = {
    NODE_ENV: 'test',
    LOOPTRACE_DATA_DIR: dataDir,
    LOOPTRACE_SECRET_KEY: '0'.repeat(64),
    AUTH_JWT_SECRET: 'test-session-secret-0123456789abcdef',
    CLICKHOUSE_URL: primaryUrl,
    CLICKHOUSE_READ_URL: replicaUrl,
    CLICKHOUSE_USER: 'looptrace',
    CLICKHOUSE_PASSWORD: 'secret',
  };
  ch = await createClickHouse(loadConfig(env));
});

afterAll(async () => {
  await ch?.close();
  await Promise.all([primary.stop(), replica.stop()]);
  rmSync(dataDir, { recursive: true, force: true });
});

beforeEach(() => {
  for (const fake of [primary, replica]) {
    fake.requests.length = 0;
    fake.answers = {};
  }
});

describe('config', () => {
  it('refuses CLICKHOUSE_READ_URL with embedded ClickHouse (no CLICKHOUSE_URL), before writing anything', () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'looptrace-read-url-embedded-'));
    try {
      expect(() => loadConfig({ NODE_ENV: 'test', LOOPTRACE_DATA_DIR: empty, CLICKHOUSE_READ_URL: 'http://127.0.0.1:8124' })).toThrow(
        /CLICKHOUSE_READ_URL is set but CLICKHOUSE_URL is not: embedded ClickHouse .* has no replicas to read from/,
      );
      // Blank counts as unset, as for every variable.
      expect(() => loadConfig({ NODE_ENV: 'test', LOOPTRACE_DATA_DIR: empty, CLICKHOUSE_URL: ' ', CLICKHOUSE_READ_URL: 'http://127.0.0.1:8124' })).toThrow(/CLICKHOUSE_READ_URL/);
      expect(readdirSync(empty)).toEqual([]); // no generated secret left behind by a refused start
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('takes it next to a server, and leaves it unset by default', () => {
    expect(loadConfig(env).clickhouse).toMatchObject({ url: env.CLICKHOUSE_URL, readUrl: env.CLICKHOUSE_READ_URL });
    expect(loadConfig({ ...env, CLICKHOUSE_READ_URL: '' }).clickhouse.readUrl).toBeUndefined();
    expect(() => loadConfig({ ...env, CLICKHOUSE_READ_URL: 'not a url' })).toThrow(/CLICKHOUSE_READ_URL must be a URL/);
  });
});

describe('the store with CLICKHOUSE_READ_URL', () => {
  it('sends rows and stream to the read URL, and inserts, commands and rowsFromPrimary to CLICKHOUSE_URL', async () => {
    expect(ch.readsFromReplica).toBe(true);
    replica.answers['test.read'] = [{ n: 7 }];
    primary.answers['test.read_primary'] = [{ n: 8 }];

    expect(await ch.rows<{ n: number }>('test.read', 'SELECT {n:UInt8} AS n', { n: 7 })).toEqual([{ n: 7 }]);
    expect(await ch.rowsFromPrimary<{ n: number }>('test.read_primary', 'SELECT {n:UInt8} AS n', { n: 8 })).toEqual([{ n: 8 }]);
    await ch.insert('spans', [{ trace_id: TRACE, name: 'a' }]);
    await ch.insert('traces', [{ id: TRACE, name: 'a' }], ['id', 'name']);
    await ch.command('test.delete', 'DELETE FROM spans WHERE tenant_id = {tenant:UUID}', { tenant: TENANT });
    const chunks: string[] = [];
    for await (const chunk of ch.stream('SELECT 1', {}, 'CSV')) chunks.push(chunk.data.toString());

    expect(replica.seen()).toEqual(['test.read', expect.stringMatching(/^SELECT 1\b/)]);
    expect(primary.seen()).toEqual(['test.read_primary', 'insert:spans', 'insert:traces', 'test.delete']);
    expect(primary.requests[1]!.data).toContain(TRACE);
    expect(chunks.join('')).not.toBe('');
  });

  it('uses the same credentials and database on both', async () => {
    await ch.rows('test.creds', 'SELECT 1');
    await ch.rowsFromPrimary('test.creds', 'SELECT 1');
    const basic = `Basic ${Buffer.from('looptrace:secret').toString('base64')}`;
    for (const fake of [primary, replica]) {
      expect(fake.requests.map((r) => [r.authorization, r.database])).toEqual([[basic, 'looptrace']]);
    }
  });

  it('migrates on the primary only: DDL, the schema_migrations read and its rows', async () => {
    // The migrator's advisory lock is Postgres's: a reserved connection that grants every lock.
    const conn = Object.assign(async () => [], { release: () => {} });
    const sql = { reserve: async () => conn } as unknown as Sql;
    // The traces table as the rebuild of 007 leaves it: nothing to copy.
    primary.answers['migrate.rebuild'] = [{ name: 'traces', q: 'CREATE TABLE looptrace.traces (`id` UUID) ENGINE = ReplacingMergeTree ORDER BY id SETTINGS index_granularity = 8192, index_granularity_bytes = 1048576' }];
    const applied = await migrateClickHouse(ch, sql);
    expect(applied.length).toBeGreaterThan(0);
    expect(replica.requests).toEqual([]);
    expect(primary.requests.some((r) => /^\s*SELECT name FROM schema_migrations FINAL/.test(r.query))).toBe(true);
    expect(primary.requests.some((r) => /CREATE TABLE IF NOT EXISTS spans/.test(r.query))).toBe(true);
    expect(primary.seen()).toContain('insert:schema_migrations');
    expect(primary.seen()).toContain('migrate.rebuild');
  });

  it('reads back inside the group commit and in settlement from the primary', async () => {
    const otlp = otlpRepository(ch);
    await otlp.storedSpans([{ tenantId: TENANT, projectId: PROJECT, traceId: TRACE }]);
    await otlp.rootDetails([{ tenantId: TENANT, projectId: PROJECT, traceId: TRACE, spanId: SPAN }]);
    const stored = storedTraceRepository(ch);
    await stored.withTraceRow(TENANT, [TRACE]);
    await stored.withSpans(TENANT, [TRACE]);
    expect(primary.seen()).toEqual(['otlp.state.stored_spans', 'otlp.state.root_details', 'ingest.settle.traces', 'ingest.settle.spans']);
    expect(replica.requests).toEqual([]);
  });

  it('serves listings from the read URL and worker reads of fresh traces from the primary', async () => {
    const traces = traceRepository(ch);
    await traces.findMany(TENANT, [PROJECT], [TRACE]);
    await traces.spanOutcomes(TENANT, [PROJECT], [TRACE]);
    await otlpRepository(ch).traceHints(TENANT, [TRACE]);
    expect(primary.seen()).toEqual(['traces.get_many', 'traces.span_outcomes']);
    expect(replica.seen()).toEqual(['otlp.export.traces']);
  });
});

describe('GET /v1/traces/{id} with a lagging read replica', () => {
  const row = (spanCount: number) => ({
    tenant_id: TENANT, project_id: PROJECT, id: TRACE, name: 'answer', input: 'q', output: 'a', session_id: '', external_id: '',
    model: '', tags: [], tag_map: {}, metadata: '{}', error: null, failure_types: [], latency_ms: 5, cost: 0,
    prompt_tokens_total: 0, completion_tokens_total: 0, total_token_count: 0, span_count: spanCount, version: 1,
    started_at: '2026-11-24 10:00:00.000', ended_at: '2026-11-24 10:00:00.005',
  });
  const span = (id: string) => ({
    tenant_id: TENANT, project_id: PROJECT, trace_id: TRACE, span_id: id, parent_span_id: null, name: 's', type: 'llm', input: '', output: '',
    model: '', start_time: '2026-11-24 10:00:00.000000000', end_time: '2026-11-24 10:00:00.005000000', latency_ms: 5,
    prompt_tokens: 0, completion_tokens: 0, cost: 0, error: null, failure_type: '', status_code: 0, metadata: '{}',
    otel_trace_id: '', otel_span_id: '', created_at: '2026-11-24 10:00:00.010',
  });
  const SPAN_2 = '00000000-0000-0000-0000-000000000002';
  const service = () =>
    new TraceService(
      traceRepository(ch),
      { locate: async () => ({ projectId: PROJECT, startedAt: '2026-11-24 10:00:00.000', source: 'native' as const }), projectsByTrace: async () => new Map() },
      { depth: async () => 0 },
    );

  it('answers from the replica when it has the trace and all its spans', async () => {
    replica.answers['traces.get'] = [row(1)];
    replica.answers['traces.spans'] = [span(SPAN)];
    const trace = await service().get(TENANT, TRACE);
    expect(trace.spans).toHaveLength(1);
    expect(primary.requests).toEqual([]);
  });

  it('falls back to the primary when the replica has not got the trace yet (the registry says it exists)', async () => {
    primary.answers['traces.get'] = [row(1)];
    primary.answers['traces.spans'] = [span(SPAN)];
    const trace = await service().get(TENANT, TRACE);
    expect(trace.id).toBe(TRACE);
    expect(replica.seen()).toEqual(['traces.get', 'traces.get_moved']);
    expect(primary.seen()).toEqual(['traces.get', 'traces.spans']);
  });

  it('falls back to the primary when the replica holds fewer spans than the trace row counts', async () => {
    replica.answers['traces.get'] = [row(2)];
    replica.answers['traces.spans'] = [span(SPAN)];
    primary.answers['traces.get'] = [row(2)];
    primary.answers['traces.spans'] = [span(SPAN), span(SPAN_2)];
    const trace = await service().get(TENANT, TRACE);
    expect(trace.spans.map((s) => s.id)).toEqual([SPAN, SPAN_2]);
    expect(primary.seen()).toEqual(['traces.get', 'traces.spans']);
  });

  it('is 404 when neither has it', async () => {
    await expect(service().get(TENANT, TRACE)).rejects.toMatchObject({ status: 404 });
    expect(primary.seen()).toEqual(['traces.get', 'traces.get_moved']);
  });
});

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeTrace, type NormalizedTrace } from '../../src/modules/ingest/normalize.js';
import { traceInput } from '../../src/modules/ingest/schemas.js';
import { traceUuid } from '../../src/platform/otel-ids.js';
import { traceTokensRepository } from '../../src/modules/ingest/tokens-repo.js';
import { tokenWrites } from '../../src/modules/ingest/tokens.js';
import { writeTraceBatch } from '../../src/modules/ingest/writer.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { anOtlpRequest, anOtlpSpan, otelTraceId } from '../builders/otlp.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';

/**
 * The window between a trace's reservation in the registry (Postgres) and the commit of its rows
 * in ClickHouse, made deterministic: each test leaves exactly what a process killed at one point
 * of that window leaves behind, then acts as the client retrying.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

type Stage = 'reserved' | 'spans written' | 'all written';

/** A writer of some instance, retired (its successor started) unless told otherwise. */
async function aWriter(options: { instance?: string; retired?: boolean } = {}): Promise<string> {
  const id = randomUUID();
  await ctx.stores.sql`insert into ingest_writers (id, instance, retired_at)
                       values (${id}, ${options.instance ?? `crashed-${id}`}, ${options.retired === false ? null : new Date()})`;
  return id;
}

function normalized(t: TestTenant, body: ReturnType<typeof aTrace>): NormalizedTrace {
  const result = normalizeTrace(traceInput.parse(body), { tenantId: t.tenantId, projectId: t.projectId, prices: new Map(), now: Date.now() });
  if (Array.isArray(result)) throw new Error(JSON.stringify(result));
  return result;
}

/** What a writer killed at `stage` leaves: a pending, counted reservation and part of the rows. */
async function leftBehind(t: TestTenant, body: ReturnType<typeof aTrace>, stage: Stage, writer: string, source: 'native' | 'otlp' = 'native', createdAt = new Date()) {
  const trace = normalized(t, body);
  await ctx.stores.sql`
    insert into trace_registry (tenant_id, trace_id, project_id, started_at, source, state, writer, created_at)
    values (${t.tenantId}, ${trace.trace.id}, ${t.projectId}, ${new Date(trace.startedAtMs)}, ${source}, 'pending', ${writer}, ${createdAt})`;
  await ctx.stores.sql`
    insert into trace_usage (tenant_id, month, traces) values (${t.tenantId}, date_trunc('month', now())::date, 1)
    on conflict (tenant_id, month) do update set traces = trace_usage.traces + 1`;
  if (stage === 'all written') await writeTraceBatch(ctx.stores.ch, { traces: [trace.trace], spans: trace.spans });
  if (stage === 'spans written') {
    // A commit writes the trace's search tokens after its spans and before its row.
    await writeTraceBatch(ctx.stores.ch, { traces: [], spans: trace.spans });
    await traceTokensRepository(ctx.stores.ch).write(tokenWrites({ traces: [trace.trace], spans: trace.spans }));
  }
  return trace;
}

const ingest = (t: TestTenant, body: unknown) => ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: body as object });
const ingestBatch = (t: TestTenant, traces: unknown[]) =>
  ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces } });
const usage = async (t: TestTenant) =>
  (await ctx.stores.sql<{ traces: number }[]>`select traces from trace_usage where tenant_id = ${t.tenantId}`)[0]?.traces ?? 0;
const registryRow = async (t: TestTenant, traceId: string) =>
  (await ctx.stores.sql<{ state: string; writer: string | null }[]>`
    select state, writer from trace_registry where tenant_id = ${t.tenantId} and trace_id = ${traceId}`)[0];
const detail = async (t: TestTenant, id: string) => ctx.app.inject({ method: 'GET', url: `/v1/traces/${id}`, headers: t.auth });

describe('a retry after a writer died between reservation and commit', () => {
  it('reserved only: the retry is created (not 409), counted once, and a resend is then 409', async () => {
    const t = await createTenant(ctx.app);
    const body = aTrace({ spans: [aSpan(), aSpan()] });
    await leftBehind(t, body, 'reserved', await aWriter());
    expect(await usage(t)).toBe(1);

    const retry = await ingest(t, body);
    expect(retry.statusCode, retry.body).toBe(201);
    expect(await registryRow(t, body.id)).toEqual({ state: 'committed', writer: ctx.app.services.traceRegistry.writerId });
    expect(await usage(t)).toBe(1);
    expect((await ingest(t, body)).statusCode).toBe(409);
    expect((await detail(t, body.id)).json().spans).toHaveLength(2);
  });

  it('spans written, trace row not: the orphan spans go, the retry is created with exactly its own spans', async () => {
    const t = await createTenant(ctx.app);
    // Server-generated span ids: the retry's spans differ from the ones the dead write left.
    const spanWithoutId = () => {
      const { id: _id, ...span } = aSpan();
      return span;
    };
    const body = aTrace({ spans: [spanWithoutId(), spanWithoutId(), spanWithoutId()] });
    await leftBehind(t, body, 'spans written', await aWriter());

    const retry = await ingestBatch(t, [body]);
    expect(retry.statusCode, retry.body).toBe(201);
    const read = await detail(t, body.id);
    expect(read.statusCode).toBe(200);
    expect(read.json().spans).toHaveLength(3);
    expect(await usage(t)).toBe(1);
    const [tokens] = await ctx.stores.ch.rows<{ n: string }>('test', 'SELECT count() AS n FROM trace_tokens WHERE tenant_id = {t:UUID} AND trace_id = {id:UUID}', { t: t.tenantId, id: body.id });
    expect(Number(tokens!.n), 'the token rows of the dead write went with its spans').toBe(1);
  });

  it('everything written, confirmation not: the trace is stored, so the retry is 409 and the trace reads whole', async () => {
    const t = await createTenant(ctx.app);
    const body = aTrace({ spans: [aSpan(), aSpan()] });
    await leftBehind(t, body, 'all written', await aWriter());

    const retry = await ingest(t, body);
    expect(retry.statusCode, retry.body).toBe(409);
    expect(retry.json().code).toBe('trace_exists');
    expect((await registryRow(t, body.id))!.state).toBe('committed');
    expect((await detail(t, body.id)).json().spans).toHaveLength(2);
    expect(await usage(t)).toBe(1);
  });
});

describe('a duplicate of a write still in flight', () => {
  it('is answered 503 with Retry-After, alone and inside a batch, never 409', async () => {
    const t = await createTenant(ctx.app);
    const body = aTrace();
    // This very process holds the reservation and it is young: its write may still commit.
    await leftBehind(t, body, 'reserved', ctx.app.services.traceRegistry.writerId);

    const single = await ingest(t, body);
    expect(single.statusCode).toBe(503);
    expect(single.json().code).toBe('service_unavailable');
    expect(single.headers['retry-after']).toBe('1');

    const alone = await ingestBatch(t, [body]);
    expect(alone.statusCode).toBe(503);
    expect(alone.headers['retry-after']).toBe('1');

    const other = aTrace();
    const mixed = await ingestBatch(t, [body, other]);
    expect(mixed.statusCode).toBe(207);
    expect(mixed.headers['retry-after']).toBe('1');
    expect(mixed.json().results.map((r: { status: number }) => r.status)).toEqual([503, 201]);
    expect((await registryRow(t, body.id))!.state).toBe('pending');
  });

  it('is settled once the reservation is older than any write of the batcher can take', async () => {
    const t = await createTenant(ctx.app);
    const body = aTrace();
    await leftBehind(t, body, 'reserved', ctx.app.services.traceRegistry.writerId, 'native', new Date(Date.now() - 3_600_000));
    const retry = await ingest(t, body);
    expect(retry.statusCode, retry.body).toBe(201);
    expect(await usage(t)).toBe(1);
  });
});

describe('several API replicas', () => {
  it("a replica answers 503 for another live replica's write in flight, and settles it once that replica has shut down", async () => {
    const t = await createTenant(ctx.app);
    const other = await startApp();
    const body = aTrace();
    try {
      await leftBehind(t, body, 'reserved', other.app.services.traceRegistry.writerId);
      const meanwhile = await ingest(t, body);
      expect(meanwhile.statusCode).toBe(503);
      expect(meanwhile.headers['retry-after']).toBeDefined();
    } finally {
      await other.close(); // graceful: its writer retires; its write (here: never made) cannot commit any more
    }
    const retry = await ingest(t, body);
    expect(retry.statusCode, retry.body).toBe(201);
    expect(await usage(t)).toBe(1);
  });
});

describe('settlement without a colliding request', () => {
  it('a process that starts settles what the previous process of its instance left pending', async () => {
    const t = await createTenant(ctx.app);
    const instance = `restart-${randomUUID()}`;
    const predecessor = await aWriter({ instance, retired: false });
    const stored = aTrace();
    const lost = aTrace();
    await leftBehind(t, stored, 'all written', predecessor);
    await leftBehind(t, lost, 'spans written', predecessor);
    expect(await usage(t)).toBe(2);

    const successor = await startApp({ LOOPTRACE_INSTANCE_ID: instance });
    try {
      expect(await registryRow(t, stored.id)).toEqual({ state: 'committed', writer: predecessor });
      expect(await registryRow(t, lost.id)).toBeUndefined();
      expect(await usage(t)).toBe(1);
      const spans = await ctx.stores.ch.rows('test', 'SELECT span_id FROM spans WHERE tenant_id = {t:UUID} AND trace_id = {id:UUID}', {
        t: t.tenantId,
        id: lost.id,
      });
      expect(spans).toEqual([]);
      const [predecessorRow] = await ctx.stores.sql<{ retired: boolean }[]>`
        select retired_at is not null as retired from ingest_writers where id = ${predecessor}`;
      expect(predecessorRow!.retired).toBe(true);
    } finally {
      await successor.close();
    }
    const [successorRow] = await ctx.stores.sql<{ retired: boolean }[]>`
      select retired_at is not null as retired from ingest_writers where id = ${successor.app.services.traceRegistry.writerId}`;
    expect(successorRow!.retired).toBe(true); // a graceful shutdown retires the writer
  });

  it('OTLP registrations: with spans stored they are committed and owe a rollup; without, released with their quota', async () => {
    const t = await createTenant(ctx.app);
    const writer = await aWriter();
    const withSpans = await leftBehind(t, aTrace(), 'spans written', writer, 'otlp');
    const without = await leftBehind(t, aTrace(), 'reserved', writer, 'otlp');
    expect(await usage(t)).toBe(2);

    await ctx.app.services.traceRegistry.settleAbandoned();
    expect((await registryRow(t, withSpans.trace.id))!.state).toBe('committed');
    expect(await registryRow(t, without.trace.id)).toBeUndefined();
    expect(await usage(t)).toBe(1);
    const owed = await ctx.stores.sql`select 1 from trace_rows_owed where tenant_id = ${t.tenantId} and trace_id = ${withSpans.trace.id}`;
    expect(owed).toHaveLength(1);
  });

  it('an OTLP request merging into an abandoned registration commits it, and the trace is counted once', async () => {
    const t = await createTenant(ctx.app);
    const otelId = otelTraceId();
    await leftBehind(t, aTrace({ id: traceUuid(otelId) }), 'reserved', await aWriter(), 'otlp');
    const merged = await ctx.app.inject({
      method: 'POST',
      url: '/v1/otlp/traces',
      headers: { ...t.auth, 'content-type': 'application/json' },
      payload: JSON.stringify(anOtlpRequest([anOtlpSpan({ traceId: otelId })])),
    });
    expect(merged.statusCode, merged.body).toBe(200);
    const [row] = await ctx.stores.sql<{ state: string; spans_at: Date | null }[]>`
      select state, spans_at from trace_registry where tenant_id = ${t.tenantId} and trace_id = ${traceUuid(otelId)}`;
    expect(row!.state).toBe('committed');
    expect(row!.spans_at).not.toBeNull();
    expect(await usage(t)).toBe(1);
  });
});

describe('confirmation after a group commit', () => {
  it('registers again, and counts, a trace whose write committed after its reservation was released', async () => {
    const t = await createTenant(ctx.app);
    const trace = normalized(t, aTrace());
    await ctx.app.services.traceRegistry.confirm({
      registrations: [{ tenantId: t.tenantId, traceId: trace.trace.id, projectId: t.projectId, startedAtMs: trace.startedAtMs, source: 'native' }],
    });
    expect((await registryRow(t, trace.trace.id))!.state).toBe('committed');
    expect(await usage(t)).toBe(1);
  });
});

import { credentials, makeGenericClientConstructor, Metadata, status as GrpcCode, type ServiceError } from '@grpc/grpc-js';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace as traceApi, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import protobuf from 'protobufjs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOtlpGrpcServer, traceServiceDefinition, type OtlpGrpcDeps, type OtlpGrpcServer } from '../../../src/modules/ingest/otlp/grpc.js';
import { traceUuid } from '../../../src/platform/otel-ids.js';
import { PLANS } from '../../../src/platform/plans.js';
import { StoreUnavailableError } from '../../../src/platform/store-errors.js';
import { anOtlpRequest, anOtlpSpan, decodeProtobufResponse, toProtobuf } from '../../builders/otlp.js';
import { bearer, createTenant, sessionToken, type TestContext, type TestTenant } from '../../helpers/app.js';
import { freePort, ServerProcess } from '../../helpers/server-process.js';
import { startAppWithWorkers } from '../../helpers/workers.js';

/*
 * OTLP/gRPC (TraceService/Export) next to a test app: the official OpenTelemetry JS gRPC exporter
 * for what instrumented applications send, read back through the HTTP API; a raw @grpc/grpc-js
 * client for refusals, so that the status code and trailers are observed as the wire carries them.
 */

let ctx: TestContext;
let grpc: OtlpGrpcServer;
const extraServers: OtlpGrpcServer[] = [];

/** A receiver on a free loopback port over the test app's services, access control and database. */
async function receiver(overrides: Partial<OtlpGrpcDeps> = {}): Promise<OtlpGrpcServer> {
  return startOtlpGrpcServer({
    services: ctx.app.services,
    config: ctx.stores.config,
    log: ctx.app.log,
    ...ctx.app.accessControl,
    sql: ctx.stores.sql,
    port: 0,
    host: '127.0.0.1',
    ...overrides,
  });
}

beforeAll(async () => {
  ctx = await startAppWithWorkers();
  grpc = await receiver();
});
afterAll(async () => {
  await Promise.all([grpc, ...extraServers].map((s) => s?.close(1_000)));
  await ctx?.close();
});

/** Polls until `probe` answers something `done` accepts; throws with the last answer at the timeout. */
async function eventually<T>(what: string, probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await probe();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms; last answer ${JSON.stringify(last)?.slice(0, 500)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await probe();
  }
  return last;
}

// ---- the official exporter -------------------------------------------------------------------

function makeProvider(t: TestTenant, compression: 'gzip' | 'none', metadataExtra: Record<string, string> = {}) {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${t.apiKey}`);
  for (const [k, v] of Object.entries(metadataExtra)) metadata.set(k, v);
  // The exporter's defaults otherwise: http:// means an insecure channel, as a Collector's `tls: {insecure: true}`.
  const exporter = new OTLPTraceExporter({ url: `http://127.0.0.1:${grpc.port}`, metadata, compression } as ConstructorParameters<typeof OTLPTraceExporter>[0]);
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'grpc-test' }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 20, maxExportBatchSize: 3 }), new SimpleSpanProcessor(memory)],
  });
  return { provider, memory, tracer: provider.getTracer('looptrace-grpc-test', '0.0.1') };
}

/** An agent run: a root, two LLM calls and a failing tool call. */
function agentRun(tracer: Tracer): string {
  const root = tracer.startSpan('agent run', { kind: SpanKind.SERVER, attributes: { 'openinference.span.kind': 'AGENT', 'input.value': 'plan a trip' } });
  const parent = traceApi.setSpan(ROOT_CONTEXT, root);
  const children = [1, 2].map((i) =>
    tracer.startSpan(
      `chat ${i}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.system': 'openai',
          'gen_ai.request.model': 'gpt-4o-mini',
          'gen_ai.usage.input_tokens': 100 * i,
          'gen_ai.usage.output_tokens': 10 * i,
        },
      },
      parent,
    ),
  );
  const tool = tracer.startSpan('search flights', { attributes: { 'openinference.span.kind': 'TOOL' } }, parent);
  tool.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream timed out' });
  for (const c of children) c.end();
  tool.end();
  root.setAttribute('output.value', 'done');
  root.end();
  return root.spanContext().traceId;
}

const nanos = (t: ReadableSpan['startTime']): bigint => BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]);

async function readTrace(t: TestTenant, traceId: string) {
  const res = await eventually(
    `GET /v1/traces/${traceId} with 4 spans`,
    () => ctx.app.inject({ method: 'GET', url: `/v1/traces/${traceUuid(traceId)}`, headers: t.auth }),
    (r) => r.statusCode === 200 && r.json().span_count === 4 && r.json().spans?.length === 4,
  );
  return res.json();
}

describe('OpenTelemetry JS gRPC exporter → TraceService/Export', () => {
  for (const compression of ['none', 'gzip'] as const) {
    it(`${compression} compression: spans stored as sent, readable through the HTTP API`, async () => {
      const t = await createTenant(ctx.app);
      const { provider, memory, tracer } = makeProvider(t, compression);
      const traceIds = [agentRun(tracer), agentRun(tracer)];
      await provider.forceFlush();
      const sent = memory.getFinishedSpans();
      await provider.shutdown();

      for (const traceId of traceIds) {
        const trace = await readTrace(t, traceId);
        expect(trace).toMatchObject({ id: traceUuid(traceId), project_id: t.projectId, name: 'agent run', span_count: 4, prompt_tokens_total: 300, completion_tokens_total: 30 });
        const mine = sent.filter((s) => s.spanContext().traceId === traceId);
        const bySpanId = new Map<string, { name: string; otel_trace_id: string; start_time: string }>(trace.spans.map((s: { otel_span_id: string }) => [s.otel_span_id, s]));
        for (const span of mine) {
          const stored = bySpanId.get(span.spanContext().spanId);
          expect(stored, span.name).toMatchObject({ name: span.name, otel_trace_id: traceId });
          expect(BigInt(Date.parse(stored!.start_time))).toBe(nanos(span.startTime) / 1_000_000n);
        }
        expect(trace.spans.find((s: { name: string }) => s.name === 'chat 2')).toMatchObject({ type: 'llm', model: 'gpt-4o-mini', prompt_tokens: 200, completion_tokens: 20 });
        expect(trace.spans.find((s: { name: string }) => s.name === 'search flights')).toMatchObject({ type: 'tool', error: 'upstream timed out' });
      }

      // The trace list shows them too (it may take a moment).
      const list = await eventually(
        'GET /v1/traces lists both',
        async () => (await ctx.app.inject({ method: 'GET', url: `/v1/traces?project_id=${t.projectId}`, headers: t.auth })).json(),
        (body) => traceIds.every((id) => body.traces?.some((row: { id: string }) => row.id === traceUuid(id))),
      );
      expect(list.traces).toHaveLength(2);
    });
  }

  it('writes to the project named by project_id metadata, as the HTTP route’s query parameter does', async () => {
    const t = await createTenant(ctx.app);
    const other = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: 'grpc-other' } });
    expect(other.statusCode).toBe(201);
    const { provider, tracer } = makeProvider(t, 'none', { project_id: other.json().id });
    const traceId = agentRun(tracer);
    await provider.forceFlush();
    await provider.shutdown();
    expect((await readTrace(t, traceId)).project_id).toBe(other.json().id);
  });
});

// ---- a raw client ----------------------------------------------------------------------------

const TraceServiceClient = makeGenericClientConstructor(traceServiceDefinition, 'TraceService');
type RawClient = InstanceType<typeof TraceServiceClient> & {
  Export(request: Buffer, metadata: Metadata, callback: (err: ServiceError | null, response?: Buffer) => void): void;
};

/** One Export over a fresh channel: the error (with its trailers) or the decoded response. */
async function rawExport(server: { port: number }, body: Buffer, headers: Record<string, string> = {}, options: Record<string, number> = {}) {
  const client = new TraceServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure(), options) as RawClient;
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
  try {
    return await new Promise<{ error: ServiceError | null; response?: ReturnType<typeof decodeProtobufResponse> }>((resolve) => {
      client.Export(body, metadata, (error, response) => resolve({ error, response: response ? decodeProtobufResponse(response) : undefined }));
    });
  } finally {
    client.close();
  }
}

// google.rpc.Status and its details, declared here from googleapis' protos (not the server's copy).
const rpc = new protobuf.Root();
protobuf.parse(
  `syntax = "proto3";
   package google.rpc;
   message Any { string type_url = 1; bytes value = 2; }
   message Status { int32 code = 1; string message = 2; repeated Any details = 3; }
   message Duration { int64 seconds = 1; int32 nanos = 2; }
   message RetryInfo { Duration retry_delay = 1; }
   message ErrorInfo { string reason = 1; string domain = 2; map<string, string> metadata = 3; }`,
  rpc,
);
const RpcStatus = rpc.lookupType('google.rpc.Status');

/** The status details trailer: ErrorInfo and RetryInfo (when present) decoded. */
function statusDetails(error: ServiceError) {
  const [raw] = error.metadata.get('grpc-status-details-bin');
  expect(raw, 'grpc-status-details-bin trailer').toBeInstanceOf(Buffer);
  const status = RpcStatus.toObject(RpcStatus.decode(raw as Buffer), { longs: Number }) as { code: number; message: string; details?: { typeUrl: string; value: Uint8Array }[] };
  const detail = (name: string) => {
    const any = status.details?.find((d) => d.typeUrl === `type.googleapis.com/google.rpc.${name}`);
    const type = rpc.lookupType(`google.rpc.${name}`);
    return any ? (type.toObject(type.decode(any.value), { longs: Number }) as Record<string, unknown>) : undefined;
  };
  return {
    code: status.code,
    message: status.message,
    errorInfo: detail('ErrorInfo') as { reason: string; domain: string; metadata: Record<string, string> } | undefined,
    retryInfo: detail('RetryInfo') as { retryDelay?: { seconds?: number } } | undefined,
  };
}

const oneSpan = (overrides: Parameters<typeof anOtlpSpan>[0] = {}) => toProtobuf(anOtlpRequest([anOtlpSpan(overrides)]));

describe('TraceService/Export over a raw gRPC client', () => {
  it('answers an empty ExportTraceServiceResponse, and partial_success for rejected spans, like HTTP', async () => {
    const t = await createTenant(ctx.app);
    const ok = await rawExport(grpc, oneSpan(), t.auth);
    expect(ok.error).toBeNull();
    expect(ok.response).toEqual({});

    const good = anOtlpSpan();
    const bad = anOtlpSpan({ name: '' });
    const partial = await rawExport(grpc, toProtobuf(anOtlpRequest([good, bad])), t.auth);
    expect(partial.error).toBeNull();
    expect(partial.response?.partialSuccess).toMatchObject({ rejectedSpans: 1, errorMessage: expect.stringContaining('span name is empty') });
    expect((await readTraceOf(t, good.traceId)).statusCode).toBe(200);

    // The audit chain records gRPC exports as it records HTTP ones.
    const rows = await ctx.stores.sql<{ action: string; resource_id: string | null; details: Record<string, unknown> }[]>`
      select action, resource_id, details from audit_log where tenant_id = ${t.tenantId} and action = 'trace.ingest' order by seq`;
    expect(rows).toHaveLength(2);
    expect(rows[1]).toMatchObject({ resource_id: traceUuid(good.traceId), details: { accepted_spans: 1, rejected_spans: 1, traces: 1 } });
  });

  it('refuses a missing or unknown token with UNAUTHENTICATED', async () => {
    const missing = await rawExport(grpc, oneSpan());
    expect(missing.error?.code).toBe(GrpcCode.UNAUTHENTICATED);
    expect(statusDetails(missing.error!).errorInfo).toMatchObject({ reason: 'unauthorized', domain: 'looptrace' });
    const unknown = await rawExport(grpc, oneSpan(), bearer(`lt_${'x'.repeat(40)}`));
    expect(unknown.error?.code).toBe(GrpcCode.UNAUTHENTICATED);
  });

  it('refuses a query-scoped key and a viewer with PERMISSION_DENIED', async () => {
    const t = await createTenant(ctx.app);
    const key = await ctx.app.inject({ method: 'POST', url: '/v1/apikeys', headers: t.auth, payload: { name: 'read', scopes: ['query'] } });
    const scoped = await rawExport(grpc, oneSpan(), bearer(key.json().secret));
    expect(scoped.error?.code).toBe(GrpcCode.PERMISSION_DENIED);
    expect(statusDetails(scoped.error!).errorInfo?.reason).toBe('scope_forbidden');

    const viewer = await rawExport(grpc, oneSpan(), { ...bearer(await sessionToken(t.tenantId, 'viewer')), project_id: t.projectId });
    expect(viewer.error?.code).toBe(GrpcCode.PERMISSION_DENIED);
    expect(statusDetails(viewer.error!).errorInfo?.reason).toBe('role_forbidden');
  });

  it('refuses bytes that are no ExportTraceServiceRequest, and a bad project_id, with INVALID_ARGUMENT', async () => {
    const t = await createTenant(ctx.app);
    const garbage = await rawExport(grpc, Buffer.from('this is not protobuf \xff\xff\xff\xff'), t.auth);
    expect(garbage.error?.code).toBe(GrpcCode.INVALID_ARGUMENT);
    expect(garbage.error?.details).toContain('not a valid OTLP ExportTraceServiceRequest');
    expect(statusDetails(garbage.error!).errorInfo?.reason).toBe('bad_request');

    const badProject = await rawExport(grpc, oneSpan(), { ...t.auth, project_id: 'not-a-uuid' });
    expect(badProject.error?.code).toBe(GrpcCode.INVALID_ARGUMENT);
    // A session names its project (an API key has a default one), as over HTTP: 422 there.
    const session = await rawExport(grpc, oneSpan(), bearer(await sessionToken(t.tenantId, 'member')));
    expect(session.error?.code).toBe(GrpcCode.INVALID_ARGUMENT);
    expect(statusDetails(session.error!).errorInfo?.reason).toBe('validation_error');
    const unknownProject = await rawExport(grpc, oneSpan(), { ...t.auth, project_id: '00000000-0000-4000-8000-000000000000' });
    expect(unknownProject.error?.code).toBe(GrpcCode.NOT_FOUND);
  });

  it('answers RESOURCE_EXHAUSTED without RetryInfo once the monthly trace quota is used up (402 over HTTP)', async () => {
    const t = await createTenant(ctx.app, 'starter');
    const month = new Date().toISOString().slice(0, 7) + '-01';
    await ctx.stores.sql`insert into trace_usage (tenant_id, month, traces) values (${t.tenantId}, ${month}, ${PLANS.starter.tracesPerMonth!})`;
    const { error } = await rawExport(grpc, oneSpan(), t.auth);
    expect(error?.code).toBe(GrpcCode.RESOURCE_EXHAUSTED);
    const details = statusDetails(error!);
    expect(details.errorInfo?.reason).toBe('trace_quota_exceeded');
    // Not retryable before the month ends: the Collector retries RESOURCE_EXHAUSTED only with RetryInfo.
    expect(details.retryInfo).toBeUndefined();
  });

  it('answers RESOURCE_EXHAUSTED with RetryInfo over the ingest rate limit (429 over HTTP)', async () => {
    const t = await createTenant(ctx.app, 'starter');
    // The shared window, filled as 6,000 requests would (this minute's and the next, should one begin meanwhile).
    const windowStart = Math.floor(Date.now() / 60_000) * 60;
    for (const start of [windowStart, windowStart + 60]) {
      await ctx.stores.redis.set(`${ctx.stores.config.redisPrefix}:rl:${t.tenantId}:ingest:${start}`, PLANS.starter.ingestRequestsPerMinute!, 'EX', 180);
    }
    const { error } = await rawExport(grpc, oneSpan(), t.auth);
    expect(error?.code).toBe(GrpcCode.RESOURCE_EXHAUSTED);
    const details = statusDetails(error!);
    expect(details).toMatchObject({ code: GrpcCode.RESOURCE_EXHAUSTED, errorInfo: { reason: 'rate_limited' } });
    expect(details.retryInfo?.retryDelay?.seconds).toBeGreaterThanOrEqual(1);
    expect(details.retryInfo?.retryDelay?.seconds).toBeLessThanOrEqual(60);
    expect(error!.metadata.get('x-ratelimit-remaining')).toEqual(['0']);
  });

  it('answers UNAVAILABLE with RetryInfo when a store does not answer or the response deadline passes (503 over HTTP)', async () => {
    const t = await createTenant(ctx.app);
    const down = await receiver({
      services: { otlpIngest: { export: async () => Promise.reject(new StoreUnavailableError('clickhouse', 'write timed out')) } },
    });
    const hanging = await receiver({
      services: { otlpIngest: { export: () => new Promise(() => {}) } },
      config: { ...ctx.stores.config, responseDeadlineMs: 200 },
    });
    extraServers.push(down, hanging);
    for (const server of [down, hanging]) {
      const { error } = await rawExport(server, oneSpan(), t.auth);
      expect(error?.code).toBe(GrpcCode.UNAVAILABLE);
      const details = statusDetails(error!);
      expect(details.errorInfo?.reason).toBe('service_unavailable');
      expect(details.retryInfo?.retryDelay?.seconds).toBe(2);
    }
  });

  it('bounds the message by BODY_LIMIT_BYTES, raw and gzip-decompressed alike', async () => {
    const t = await createTenant(ctx.app);
    const small = await receiver({ config: { ...ctx.stores.config, bodyLimitBytes: 4_096 } });
    extraServers.push(small);
    const big = oneSpan({ attributes: { 'input.value': 'a'.repeat(8_000) } });
    expect((await rawExport(small, big, t.auth)).error?.code).toBe(GrpcCode.RESOURCE_EXHAUSTED);
    // Compressed it fits, decompressed it does not.
    const gzipped = await rawExport(small, big, t.auth, { 'grpc.default_compression_algorithm': 2 });
    expect(gzipped.error?.code).toBe(GrpcCode.RESOURCE_EXHAUSTED);
    expect(gzipped.error?.details).toContain('decompresses');
    // Under the limit, gzip is accepted.
    const fits = await rawExport(small, oneSpan(), t.auth, { 'grpc.default_compression_algorithm': 2 });
    expect(fits.error).toBeNull();
  });

  it('close() lets a call in flight finish, then refuses new ones', async () => {
    const t = await createTenant(ctx.app);
    let release!: () => void;
    const started = new Promise<void>((resolve) => {
      release = resolve;
    });
    let unblock!: () => void;
    const blocked = new Promise<void>((resolve) => {
      unblock = resolve;
    });
    const server = await receiver({
      services: {
        otlpIngest: {
          export: async (...args) => {
            release();
            await blocked;
            return ctx.app.services.otlpIngest.export(...args);
          },
        },
      },
    });
    const inFlight = rawExport(server, oneSpan(), t.auth);
    await started;
    const closed = server.close(10_000);
    unblock();
    expect((await inFlight).error).toBeNull();
    await closed;
    const after = await rawExport(server, oneSpan(), t.auth, { 'grpc.initial_reconnect_backoff_ms': 100 });
    expect(after.error?.code).toBe(GrpcCode.UNAVAILABLE);
  });
});

const readTraceOf = (t: TestTenant, traceId: string) =>
  eventually(
    `GET /v1/traces/${traceId}`,
    () => ctx.app.inject({ method: 'GET', url: `/v1/traces/${traceUuid(traceId)}`, headers: t.auth }),
    (r) => r.statusCode === 200,
  );

describe('src/server.ts', () => {
  it('serves OTLP/gRPC on OTLP_GRPC_PORT beside HTTP and drains it on SIGTERM', async () => {
    const t = await createTenant(ctx.app);
    const grpcPort = await freePort();
    const server = new ServerProcess(await freePort(), {
      LOOPTRACE_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'looptrace-grpc-')),
      REDIS_PREFIX: `looptrace-grpc-${process.pid}`,
      OTLP_GRPC_PORT: String(grpcPort),
      LOG_LEVEL: 'info',
    });
    try {
      await server.start();
      // It binds right after HTTP listens.
      const first = await eventually(
        'an Export accepted by the spawned server',
        () => rawExport({ port: grpcPort }, oneSpan(), t.auth),
        (r) => r.error?.code !== GrpcCode.UNAVAILABLE,
      );
      expect(first.error).toBeNull();
      await server.stop();
      expect(server.logs()).toContain('OTLP/gRPC trace receiver listening');
      expect(server.logs()).toContain('shutdown complete');
      expect((await rawExport({ port: grpcPort }, oneSpan(), t.auth)).error?.code).toBe(GrpcCode.UNAVAILABLE);
    } finally {
      await server.kill();
    }
  });
});

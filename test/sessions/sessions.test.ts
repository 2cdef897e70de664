import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionDetail, sessionList } from '../../src/modules/sessions/schemas.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { getJson, ingestTraces, listAll } from '../helpers/trace-api.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// Relative to the run's clock: the default window is "the last 30 days".
const now = Date.now();
const ago = (ms: number) => new Date(now - ms).toISOString();
const plus = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();

/** A trace of `session` starting at `start`, with spans given as [offsetMs, durationMs, overrides]. */
function sessionTrace(session: string | undefined, start: string, spans: [number, number, Record<string, unknown>?][]) {
  return aTrace({
    ...(session ? { session_id: session } : {}),
    spans: spans.map(([offset, duration, overrides]) =>
      aSpan({ start_time: plus(start, offset), end_time: plus(start, offset + duration), ...overrides }),
    ),
  });
}

describe('GET /v1/sessions', () => {
  let t: TestTenant;
  const chat = [
    sessionTrace('chat', ago(5 * HOUR), [[0, 1_000, { cost: 0.25, prompt_tokens: 10, completion_tokens: 5 }]]),
    sessionTrace('chat', ago(4 * HOUR), [
      [0, 500, { cost: 0.5, prompt_tokens: 20, completion_tokens: 10, error: 'rate limit' }],
      [600, 400, { cost: 0, prompt_tokens: 0, completion_tokens: 0 }],
    ]),
  ];
  const support = [sessionTrace('support', ago(2 * HOUR), [[0, 2_000, { cost: 1, prompt_tokens: 1, completion_tokens: 1 }]])];
  const early = [sessionTrace('early', ago(10 * HOUR), [[0, 100, {}]])];
  const old = [sessionTrace('old', ago(40 * DAY), [[0, 100, {}]])];
  const loose = [sessionTrace(undefined, ago(HOUR), [[0, 100, {}]])];

  beforeAll(async () => {
    t = await createTenant(ctx.app);
    await ingestTraces(ctx.app, t, [...chat, ...support, ...early, ...old, ...loose]);
  });

  it('aggregates traces by session_id over the last 30 days, most recently active first', async () => {
    const { status, body } = await getJson(ctx.app, t, '/v1/sessions');
    expect(status).toBe(200);
    expect(sessionList.safeParse(body).success).toBe(true);
    expect(body.sessions.map((s: { session_id: string }) => s.session_id)).toEqual(['support', 'chat', 'early']);
    const chatSession = body.sessions[1];
    expect(chatSession).toMatchObject({
      session_id: 'chat',
      trace_count: 2,
      span_count: 3,
      prompt_tokens: 30,
      completion_tokens: 15,
      total_tokens: 45,
      first_started_at: chat[0]!.spans[0]!.start_time,
      last_ended_at: plus(chat[1]!.spans[0]!.start_time as string, 1_000),
      error_count: 1,
    });
    expect(chatSession.total_cost).toBeCloseTo(0.75);
    expect(body.sessions[0]).toMatchObject({ trace_count: 1, span_count: 1, error_count: 0, total_tokens: 2 });
  });

  it('reaches older sessions with an explicit window, bounds inclusive', async () => {
    const oldStart = old[0]!.spans[0]!.start_time as string;
    const { body } = await getJson(ctx.app, t, '/v1/sessions', { from: oldStart, to: oldStart });
    expect(body.sessions.map((s: { session_id: string }) => s.session_id)).toEqual(['old']);
    const none = await getJson(ctx.app, t, '/v1/sessions', { from: plus(oldStart, 1), to: plus(oldStart, DAY) });
    expect(none.body.sessions).toEqual([]);
  });

  it('pages by last activity without skipping or repeating', async () => {
    const pages = await listAll(ctx.app, t, '/v1/sessions', 'sessions', { limit: 1 });
    expect(pages.map((p) => p.map((s) => (s as unknown as { session_id: string }).session_id))).toEqual([['support'], ['chat'], ['early']]);
  });

  it('filters by project and refuses from after to', async () => {
    const created = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: 'other' } });
    const project = created.json().id as string;
    await ingestTraces(ctx.app, t, [{ ...sessionTrace('elsewhere', ago(HOUR), [[0, 10, {}]]), project_id: project }]);
    const { body } = await getJson(ctx.app, t, '/v1/sessions', { project_id: project });
    expect(body.sessions.map((s: { session_id: string }) => s.session_id)).toEqual(['elsewhere']);
    const bad = await getJson(ctx.app, t, '/v1/sessions', { from: ago(HOUR), to: ago(2 * HOUR) });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain('query.to');
    const future = await getJson(ctx.app, t, '/v1/sessions', { from: new Date(now + DAY).toISOString() });
    expect(future.status).toBe(400);
    expect(future.body.error).toContain('query.from');
  });

  it("never shows another tenant's sessions", async () => {
    const stranger = await createTenant(ctx.app);
    expect((await getJson(ctx.app, stranger, '/v1/sessions')).body.sessions).toEqual([]);
    expect((await getJson(ctx.app, stranger, '/v1/sessions/chat')).status).toBe(404);
  });
});

describe('GET /v1/sessions/{id}', () => {
  it('returns the totals and the traces oldest first, paginated', async () => {
    const t = await createTenant(ctx.app);
    const tie = ago(3 * HOUR);
    const traces = [
      sessionTrace('conv/1 with spaces', ago(6 * HOUR), [[0, 100, { prompt_tokens: 1, completion_tokens: 1 }]]),
      sessionTrace('conv/1 with spaces', tie, [[0, 100, {}]]),
      sessionTrace('conv/1 with spaces', tie, [[0, 100, {}]]),
      sessionTrace('conv/1 with spaces', ago(HOUR), [[0, 100, { error: 'context length exceeded' }]]),
      sessionTrace('another', ago(HOUR), [[0, 100, {}]]),
    ];
    await ingestTraces(ctx.app, t, traces);
    const path = `/v1/sessions/${encodeURIComponent('conv/1 with spaces')}`;
    const { status, body } = await getJson(ctx.app, t, path);
    expect(status).toBe(200);
    expect(sessionDetail.safeParse(body).success).toBe(true);
    expect(body.session).toMatchObject({ session_id: 'conv/1 with spaces', trace_count: 4, span_count: 4, error_count: 1, total_tokens: 2 + 3 * 15 });
    expect(body.traces.map((x: { started_at: string }) => x.started_at)).toEqual([ago(6 * HOUR), tie, tie, ago(HOUR)]);

    const pages = await listAll(ctx.app, t, path, 'traces', { limit: 1 });
    expect(pages).toHaveLength(4);
    const paged = pages.flat().map((x) => x.id);
    expect(paged).toEqual(body.traces.map((x: { id: string }) => x.id));
    expect(new Set(paged).size).toBe(4);
    expect(paged).not.toContain(traces[4]!.id);
  });

  it('answers 404 for a session without traces in the window', async () => {
    const t = await createTenant(ctx.app);
    await ingestTraces(ctx.app, t, [sessionTrace('ancient', ago(45 * DAY), [[0, 10, {}]])]);
    expect((await getJson(ctx.app, t, '/v1/sessions/ancient')).status).toBe(404);
    expect((await getJson(ctx.app, t, '/v1/sessions/ancient', { from: ago(50 * DAY) })).status).toBe(200);
    expect((await getJson(ctx.app, t, '/v1/sessions/nobody')).status).toBe(404);
    // Ids up to the schema's 256 characters reach the route (the router's default limit is 100).
    expect((await getJson(ctx.app, t, `/v1/sessions/${'s'.repeat(256)}`)).status).toBe(404);
    expect((await getJson(ctx.app, t, `/v1/sessions/${'s'.repeat(257)}`)).status).toBe(400);
  });
});

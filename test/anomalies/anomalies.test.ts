import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import { detectAnomalies, WINDOW_MS, type WindowStats } from '../../src/modules/anomalies/detector.js';
import { anomalyList } from '../../src/modules/anomalies/schemas.js';
import type { EventSink } from '../../src/modules/webhooks/types.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, createTenant, sessionToken, type TestContext } from '../helpers/app.js';
import { getJson, ingestTraces, listAll } from '../helpers/trace-api.js';
import { pollUntil, startAppWithWorkers } from '../helpers/workers.js';
import { seededRandom } from '../../bench/lib/random.js';
import { aProject, create, queryKeyAuth } from '../builders/resources.js';


/** Noisy windows of a steady project: ~120 traces, p95 ~800 ms, 2% errors, cost and tokens per trace. */
function steadySeries(seed: number, windows: number, traces = 120): WindowStats[] {
  const random = seededRandom(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return Array.from({ length: windows }, (_, i) => {
    const n = Math.max(1, Math.round(traces + gauss() * traces * 0.1));
    let errors = 0;
    for (let k = 0; k < n; k++) if (random() < 0.02) errors += 1;
    return {
      startMs: Date.UTC(2026, 10, 1) + i * WINDOW_MS,
      traces: n,
      errors,
      latencyP95: 800 + gauss() * 60,
      cost: n * (0.002 + gauss() * 0.0002),
      tokens: Math.round(n * (900 + gauss() * 50)),
    };
  });
}

const judge = (series: WindowStats[]) => detectAnomalies(series[series.length - 1]!, series);

describe('anomaly detector (pure)', () => {
  it('finds a planted latency spike, and names only the metric that moved', () => {
    const series = steadySeries(1, 37);
    series[36] = { ...series[36]!, latencyP95: 2_400 };
    const findings = judge(series);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ metric: 'latency_p95', observed: 2_400, severity: 'critical' });
    expect(findings[0]!.expected).toBeGreaterThan(700);
    expect(findings[0]!.expected).toBeLessThan(900);
    expect(findings[0]!.score).toBeGreaterThan(6);
  });

  it('finds planted error, cost and token spikes, warning or critical by score', () => {
    const series = steadySeries(2, 37);
    const last = series[36]!;
    series[36] = { ...last, errors: Math.round(last.traces * 0.3), cost: last.cost * 3, tokens: last.tokens * 3 };
    expect(judge(series).map((f) => [f.metric, f.severity]).sort()).toEqual([
      ['cost', 'critical'],
      ['error_rate', 'critical'],
      ['tokens', 'critical'],
    ]);
    const mild = steadySeries(3, 37);
    // The MAD is floored at 10% of the median (80 ms): z = 0.6745 × 500 / 80 ≈ 4.2.
    mild[36] = { ...mild[36]!, latencyP95: 1_300 };
    expect(judge(mild)).toMatchObject([{ metric: 'latency_p95', severity: 'warning' }]);
  });

  it('finds nothing in noise without a spike (500 seeded series), nor in a drop', () => {
    const alarms = Array.from({ length: 500 }, (_, seed) => judge(steadySeries(1_000 + seed, 37))).flat();
    expect(alarms).toEqual([]);
    const drop = steadySeries(4, 37);
    drop[36] = { ...drop[36]!, latencyP95: 100, cost: 0, tokens: 0 };
    expect(judge(drop)).toEqual([]);
  });

  it('stays quiet below the minimum volumes: a quiet window, a quiet baseline, too short a history', () => {
    const quiet = steadySeries(5, 37, 12);
    quiet[36] = { ...quiet[36]!, latencyP95: 10_000, errors: 12 };
    expect(judge(quiet)).toEqual([]);
    const quietBaseline = steadySeries(6, 37, 12);
    quietBaseline[36] = { ...quietBaseline[36]!, traces: 200, latencyP95: 10_000 };
    expect(judge(quietBaseline)).toEqual([]);
    const short = steadySeries(7, 12);
    short[11] = { ...short[11]!, latencyP95: 10_000 };
    expect(judge(short)).toEqual([]);
    const justEnough = steadySeries(7, 13);
    justEnough[12] = { ...justEnough[12]!, latencyP95: 10_000 };
    expect(judge(justEnough)).toMatchObject([{ metric: 'latency_p95' }]);
  });

  it('floors the MAD: a flat baseline does not turn a small change into an anomaly', () => {
    const flat = Array.from({ length: 37 }, (_, i): WindowStats => ({
      startMs: i * WINDOW_MS, traces: 50, errors: 0, latencyP95: 100, cost: 0.1, tokens: 5_000,
    }));
    flat[36] = { ...flat[36]!, latencyP95: 110, errors: 1, cost: 0.11, tokens: 5_500 };
    expect(judge(flat)).toEqual([]);
    flat[36] = { ...flat[36]!, latencyP95: 200, errors: 10 };
    expect(judge(flat).map((f) => f.metric)).toEqual(['latency_p95', 'error_rate']);
  });

  it('judges against the trailing 3 hours only', () => {
    const series = steadySeries(8, 60);
    // Long ago the project was slow; that history is outside the baseline of the last window.
    for (const w of series.slice(0, 23)) w.latencyP95 = 5_000;
    series[59] = { ...series[59]!, latencyP95: 2_400 };
    expect(judge(series)).toMatchObject([{ metric: 'latency_p95', severity: 'critical' }]);
  });
});

describe('anomaly scan (end to end)', () => {
  let ctx: TestContext;
  let emit: MockInstance<EventSink['emit']>;
  beforeAll(async () => {
    ctx = await startAppWithWorkers(['anomalies']);
    emit = vi.spyOn(ctx.app.services.webhooks, 'emit');
  });
  afterAll(async () => ctx?.close());

  /** `count` one-span traces spread over the window at `windowStart`, latencies from `latency(i)`. */
  const windowOf = (windowStart: number, count: number, latency: (i: number) => number, error?: (i: number) => string | undefined, project?: string) =>
    Array.from({ length: count }, (_, i) => {
      const start = new Date(windowStart + 5_000 + i * Math.floor((WINDOW_MS - 60_000) / count));
      return aTrace({
        ...(project ? { project_id: project } : {}),
        spans: [aSpan({ end_time: new Date(start.getTime() + latency(i)).toISOString(), error: error?.(i) ?? null }, start)],
      });
    });

  it('turns rollup windows into anomalies through the job, pages them, and adds none on a second scan', async () => {
    const t = await createTenant(ctx.app);
    const quiet = await create(ctx.app, '/v1/projects', t.auth, aProject({ name: 'quiet' }));
    // The scan judges the last three windows that ended 2+ minutes ago; spikes in the last two
    // stay judged even if a window boundary passes while the test runs.
    const judgedTo = Math.floor((Date.now() - 120_000) / WINDOW_MS) * WINDOW_MS;
    const [spiked, last] = [judgedTo - 2 * WINDOW_MS, judgedTo - WINDOW_MS];
    const traces = [];
    for (let k = 16; k >= 3; k--) {
      traces.push(...windowOf(judgedTo - k * WINDOW_MS, 20, (i) => 100 + ((i * 7 + k) % 40)));
      traces.push(...windowOf(judgedTo - k * WINDOW_MS, 5, () => 100, undefined, quiet.id));
    }
    traces.push(...windowOf(spiked, 25, (i) => 1_500 + i * 10));
    traces.push(...windowOf(last, 25, (i) => 1_500 + i * 10, (i) => (i % 2 === 0 ? 'upstream 500' : undefined)));
    traces.push(...windowOf(last, 5, () => 9_000, () => 'upstream 500', quiet.id));
    await ingestTraces(ctx.app, t, traces);
    await ctx.app.services.metricsRollup.drain();

    await ctx.app.services.jobs.add('anomalies', {});
    const found = await pollUntil(
      () => listAll(ctx.app, t, '/v1/anomalies', 'anomalies', { limit: 1 }),
      (pages) => pages.flat().length >= 3,
      300,
      100,
    );
    const anomalies = found.flat() as unknown as { id: string; metric: string; window_start: string; window_end: string; project_id: string; observed: number; severity: string }[];
    expect(found.map((p) => p.length)).toEqual([1, 1, 1]);
    expect(anomalies.map((a) => [a.window_start, a.metric]).sort()).toEqual(
      [
        [new Date(spiked).toISOString(), 'latency_p95'],
        [new Date(last).toISOString(), 'error_rate'],
        [new Date(last).toISOString(), 'latency_p95'],
      ].sort(),
    );
    expect(anomalies.map((a) => a.window_start)).toEqual([last, last, spiked].map((ms) => new Date(ms).toISOString()));
    for (const a of anomalies) {
      expect(a).toMatchObject({ project_id: t.projectId, severity: 'critical' });
      expect(Date.parse(a.window_end) - Date.parse(a.window_start)).toBe(WINDOW_MS);
    }
    expect(anomalies.find((a) => a.metric === 'latency_p95')!.observed).toBeGreaterThan(1_600);

    const again = await ctx.app.services.anomalies.scan();
    expect(again.anomalies).toBe(0);
    expect(await listAll(ctx.app, t, '/v1/anomalies', 'anomalies')).toEqual([anomalies]);
    const fired = emit.mock.calls.filter(([tenant, event]) => tenant === t.tenantId && event.type === 'anomaly.detected');
    expect(fired.map(([, event]) => event.data.id).sort()).toEqual(anomalies.map((a) => a.id).sort());

    // Filters: window_start bounds (inclusive), metric, project.
    const at = new Date(last).toISOString();
    expect((await getJson(ctx.app, t, '/v1/anomalies', { from: at, to: at })).body.anomalies).toHaveLength(2);
    expect((await getJson(ctx.app, t, '/v1/anomalies', { metric: 'error_rate' })).body.anomalies).toMatchObject([{ window_start: at }]);
    expect((await getJson(ctx.app, t, '/v1/anomalies', { project_id: quiet.id })).body.anomalies).toEqual([]);
    const body = (await getJson(ctx.app, t, '/v1/anomalies')).body;
    expect(anomalyList.parse(body)).toEqual(body);
  });

  it('answers viewers and query keys on every plan, refuses to < from, and keeps tenants apart', async () => {
    const t = await createTenant(ctx.app, 'starter');
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/anomalies', headers: viewer });
    expect([res.statusCode, res.json()]).toEqual([200, { anomalies: [], next_cursor: null, has_more: false }]);
    const keyAuth = await queryKeyAuth(ctx.app, t.auth);
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/anomalies', headers: keyAuth })).statusCode).toBe(200);
    const inverted = await getJson(ctx.app, t, '/v1/anomalies', { from: '2026-11-02T00:00:00Z', to: '2026-11-01T00:00:00Z' });
    expect(inverted.status).toBe(400);
    expect((await getJson(ctx.app, t, '/v1/anomalies', { cursor: 'not-a-cursor' })).body.code).toBe('invalid_cursor');
  });
});

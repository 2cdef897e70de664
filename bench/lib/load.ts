/**
 * HTTP load through undici pools, with the generator's own timing kept apart from the server's:
 *
 * - `openLoop`: request i is due at start + i/rate whatever happened before (no coordinated
 *   omission). Three times per request: due, *reached* (when the generator got to it: reached − due
 *   is the generator's own slip, its event loop and body building), *dispatched* (handed to undici
 *   on a free connection: dispatched − reached is waiting for the server to give a connection back,
 *   i.e. backlog). At most `maxInFlight` requests are outstanding, one per pool connection, so undici
 *   never queues a request internally where it could not be timed.
 * - `closedLoop`: `connections` workers, each sending its next request when the previous one is
 *   answered, for `seconds`: the peak rate.
 *
 * paced.ts (bench:ingest) is the older, fetch-based open loop; this one adds per-request callbacks,
 * Buffer bodies and the slip / backlog measurements the OTLP bench needs.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';

export function benchPool(origin: string, connections: number): Pool {
  return new Pool(origin, {
    connections,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: 120_000,
    bodyTimeout: 120_000,
  });
}

export interface Answer {
  status: number;
  body: Buffer;
}

async function send(pool: Pool, path: string, headers: Record<string, string>, body: Buffer | string): Promise<Answer> {
  const res = await pool.request({ path, method: 'POST', headers, body });
  return { status: res.statusCode, body: Buffer.from(await res.body.arrayBuffer()) };
}

/** Wall-clock milliseconds of a performance.now() instant. */
export const wallMs = (perfMs: number): number => performance.timeOrigin + perfMs;

export interface OpenLoopOptions {
  pool: Pool;
  path: string;
  headers: Record<string, string>;
  requestsPerSecond: number;
  seconds: number;
  maxInFlight: number;
  /** Request number `i` of this run (0-based), due at performance time `dueMs`. */
  body(i: number, dueMs: number): Buffer | string;
  /** After the body was built and handed to undici. */
  onDispatch?(i: number, atMs: number): void;
  /** Whether the answer counts as acknowledged (default: status 200–299). Called when it arrived. */
  onAnswer?(i: number, answer: Answer, atMs: number): boolean;
  onError?(i: number, err: unknown, atMs: number): void;
  sampleEveryMs?: number;
}

export interface OpenLoopResult {
  requests: number;
  acknowledged: number;
  failed: number;
  statuses: Record<string, number>;
  /** Performance time of the first due request and of the last answer. */
  startMs: number;
  lastAnswerMs: number;
  /** When the generator reached the last request (≈ seconds after start unless it fell behind). */
  lastReachedMs: number;
  /** Per request, ms: reached − due (generator slip), dispatched − reached (waiting for a connection), answered − due. */
  slipMs: Float64Array;
  connectionWaitMs: Float64Array;
  ackLatencyMs: Float64Array;
  /** Performance time each acknowledged request was answered (NaN otherwise). */
  ackAtMs: Float64Array;
  /** Requests due but not answered, sampled every `sampleEveryMs` while sending: [ms since start, count]. */
  outstanding: [number, number][];
  maxInFlightReached: number;
}

export async function openLoop(o: OpenLoopOptions): Promise<OpenLoopResult> {
  const total = Math.max(1, Math.round(o.requestsPerSecond * o.seconds));
  const intervalMs = 1000 / o.requestsPerSecond;
  const slip = new Float64Array(total).fill(NaN);
  const wait = new Float64Array(total).fill(NaN);
  const ackLatency = new Float64Array(total).fill(NaN);
  const ackAt = new Float64Array(total).fill(NaN);
  const statuses: Record<string, number> = {};
  const queue: number[] = []; // reached, waiting for a connection
  const reachedAt = new Float64Array(total);
  let inFlight = 0;
  let maxInFlightReached = 0;
  let reached = 0;
  let answered = 0;
  let acknowledged = 0;
  let failed = 0;
  let lastAnswerMs = 0;
  let allAnswered: () => void = () => {};
  const done = new Promise<void>((resolve) => (allAnswered = resolve));
  const startMs = performance.now() + 20;
  const due = (i: number) => startMs + i * intervalMs;

  const finish = () => {
    inFlight -= 1;
    answered += 1;
    lastAnswerMs = performance.now();
    const next = queue.shift();
    if (next !== undefined) dispatch(next);
    if (answered === total) allAnswered();
  };
  const dispatch = (i: number) => {
    inFlight += 1;
    maxInFlightReached = Math.max(maxInFlightReached, inFlight);
    const body = o.body(i, due(i));
    const at = performance.now();
    wait[i] = at - reachedAt[i]!;
    send(o.pool, o.path, o.headers, body).then(
      (answer) => {
        const now = performance.now();
        statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
        const ok = o.onAnswer ? o.onAnswer(i, answer, now) : answer.status >= 200 && answer.status < 300;
        if (ok) {
          acknowledged += 1;
          ackLatency[i] = now - due(i);
          ackAt[i] = now;
        } else failed += 1;
        finish();
      },
      (err: unknown) => {
        statuses.error = (statuses.error ?? 0) + 1;
        failed += 1;
        o.onError?.(i, err, performance.now());
        finish();
      },
    );
    o.onDispatch?.(i, at);
  };

  const outstanding: [number, number][] = [];
  const sampler = setInterval(() => {
    const now = performance.now();
    // Due by now (reached or not) and not answered.
    const dueByNow = Math.min(total, Math.max(0, Math.floor((now - startMs) / intervalMs) + 1));
    outstanding.push([Math.round(now - startMs), dueByNow - answered]);
  }, o.sampleEveryMs ?? 250);

  while (reached < total) {
    const now = performance.now();
    while (reached < total && due(reached) <= now) {
      const i = reached++;
      reachedAt[i] = performance.now();
      slip[i] = reachedAt[i]! - due(i);
      if (inFlight < o.maxInFlight) dispatch(i);
      else queue.push(i);
    }
    // Timers are 1 ms grained: a request due sooner waits up to ~1 ms (counted as slip) rather
    // than the loop spinning a core the server needs.
    if (reached < total) await sleep(Math.max(1, due(reached) - performance.now()));
  }
  const lastReachedMs = reachedAt[total - 1]!;
  clearInterval(sampler);
  await done;
  return {
    requests: total,
    acknowledged,
    failed,
    statuses,
    startMs,
    lastAnswerMs,
    lastReachedMs,
    slipMs: slip,
    connectionWaitMs: wait,
    ackLatencyMs: ackLatency,
    ackAtMs: ackAt,
    outstanding,
    maxInFlightReached,
  };
}

export interface ClosedLoopResult {
  connections: number;
  seconds: number;
  /** Answered within the measured window (what the rate counts), and after it (still in flight at the end). */
  acknowledged: number;
  acknowledgedAfter: number;
  failed: number;
  statuses: Record<string, number>;
  /** Requests sent in all: answered in the window, after it, or failed. */
  sent: number;
  latencyMs: number[];
}

/** Full speed: `connections` requests in flight at all times for `seconds`. */
export async function closedLoop(o: {
  pool: Pool;
  path: string;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  body(i: number, atMs: number): Buffer | string;
  onDispatch?(i: number, atMs: number): void;
  onAnswer?(i: number, answer: Answer, atMs: number): boolean;
}): Promise<ClosedLoopResult> {
  const result: ClosedLoopResult = {
    connections: o.connections,
    seconds: o.seconds,
    acknowledged: 0,
    acknowledgedAfter: 0,
    failed: 0,
    statuses: {},
    sent: 0,
    latencyMs: [],
  };
  const start = performance.now();
  const end = start + o.seconds * 1000;
  let next = 0;
  const worker = async () => {
    while (performance.now() < end) {
      const i = next++;
      const at = performance.now();
      const body = o.body(i, at);
      o.onDispatch?.(i, at);
      result.sent += 1;
      try {
        const answer = await send(o.pool, o.path, o.headers, body);
        const now = performance.now();
        result.statuses[answer.status] = (result.statuses[answer.status] ?? 0) + 1;
        const ok = o.onAnswer ? o.onAnswer(i, answer, now) : answer.status >= 200 && answer.status < 300;
        if (!ok) result.failed += 1;
        else if (now <= end) {
          result.acknowledged += 1;
          result.latencyMs.push(now - at);
        } else result.acknowledgedAfter += 1;
      } catch {
        result.statuses.error = (result.statuses.error ?? 0) + 1;
        result.failed += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: o.connections }, worker));
  result.seconds = o.seconds;
  return result;
}

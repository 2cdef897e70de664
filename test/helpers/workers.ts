import { Queue } from 'bullmq';
import type { QueueName } from '../../src/jobs/queues.js';
import { startWorkers, type Workers } from '../../src/jobs/workers.js';
import { startApp, type TestContext } from './app.js';

/**
 * Redis prefix of this test process. Start the app with `{ REDIS_PREFIX: TEST_REDIS_PREFIX }` so
 * its queues (and rate-limit windows) are its own: test files run in parallel processes and would
 * otherwise consume each other's jobs.
 */
export const TEST_REDIS_PREFIX = `looptrace-test-${process.pid}`;

/**
 * In-process BullMQ workers for a test app, for the given queues only. close() stops them and
 * removes this process's queues from Redis.
 */
export async function startTestWorkers(ctx: TestContext, queues: readonly QueueName[] = []): Promise<Workers> {
  const { config } = ctx.stores;
  if (config.redisPrefix !== TEST_REDIS_PREFIX) {
    throw new Error(`start the app with { REDIS_PREFIX: TEST_REDIS_PREFIX } (got ${config.redisPrefix}): workers must not share queues`);
  }
  const workers = await startWorkers(ctx.app.services, ctx.stores, ctx.app.log, { queues });
  await workers.scheduled;
  return {
    scheduled: workers.scheduled,
    async close() {
      await workers.close();
      for (const name of queues) {
        const queue = new Queue(name, { connection: { url: config.redisUrl }, prefix: config.redisPrefix });
        await queue.obliterate({ force: true }).catch(() => {});
        await queue.close();
      }
    },
  };
}

/** A test app with this process's own Redis prefix and in-process workers; close() stops both. */
export async function startAppWithWorkers(queues?: readonly QueueName[]): Promise<TestContext> {
  const ctx = await startApp({ REDIS_PREFIX: TEST_REDIS_PREFIX });
  const workers = await startTestWorkers(ctx, queues);
  return {
    ...ctx,
    async close() {
      await workers.close();
      await ctx.close();
    },
  };
}

/** Polls `probe` until `done` holds, at most `tries` times; returns the last value either way. */
export async function pollUntil<T>(probe: () => Promise<T>, done: (value: T) => boolean, tries = 150, intervalMs = 100): Promise<T> {
  let value = await probe();
  for (let i = 1; i < tries && !done(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    value = await probe();
  }
  return value;
}

const UNFINISHED_STATES = ['waiting', 'delayed', 'prioritized', 'active', 'waiting-children'] as const;

/**
 * Waits until every job added so far to a (non-repeatable) queue of this test process has run:
 * none waiting, delayed (a retry's backoff included), prioritized or active. Throws after
 * `timeoutMs`, with the counts. A repeatable queue always has its next run delayed: for those, run
 * the job's own work directly (e.g. `services.failureDetector.drain()`) instead.
 */
export async function queueDrained(ctx: TestContext, name: QueueName, timeoutMs = 30_000): Promise<void> {
  const { redisUrl, redisPrefix } = ctx.stores.config;
  const queue = new Queue(name, { connection: { url: redisUrl }, prefix: redisPrefix });
  try {
    await pollUntil(
      () => queue.getJobCounts(...UNFINISHED_STATES),
      (counts) => Object.values(counts).every((n) => n === 0),
      Math.ceil(timeoutMs / 50),
      50,
      () => `queue ${name} (prefix ${redisPrefix}) still has unfinished jobs`,
    );
  } finally {
    await queue.close();
  }
}

/**
 * Runs an outbox's consumer (`drain`, the work of its repeatable job) until none of the tenant's
 * candidates is left in `table`: each candidate leaves the outbox in the transaction that acts on it,
 * so afterwards everything that consumer will ever do with these traces is done and visible.
 * Candidates that are not ready yet (an OTLP trace waits 5 s) or that a concurrent pass holds are
 * waited for, up to `timeoutMs`.
 */
export async function drainOutbox(
  ctx: TestContext,
  table: 'eval_candidates' | 'failure_candidates',
  tenantId: string,
  drain: () => Promise<unknown>,
  timeoutMs = 30_000,
): Promise<void> {
  const left = async () => {
    await drain();
    const [row] = await ctx.stores.sql<{ n: number }[]>`select count(*)::int as n from ${ctx.stores.sql(table)} where tenant_id = ${tenantId}`;
    return row!.n;
  };
  await pollUntil(left, (n) => n === 0, Math.ceil(timeoutMs / 100), 100, () => `${table} of tenant ${tenantId} not drained`);
}

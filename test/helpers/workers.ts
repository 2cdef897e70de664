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
export async function startTestWorkers(ctx: TestContext, queues: readonly QueueName[] = ['trace-rollup']): Promise<Workers> {
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

import { inspect } from 'node:util';
import { Queue } from 'bullmq';
import type { QueueName } from '../../src/jobs/registry.js';
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

/**
 * Polls `probe` until `done` holds, at most `tries` times `intervalMs` apart, and returns the value
 * that satisfied it. Never returns otherwise: when `done` still does not hold after the last try it
 * throws, naming the condition and the last value seen (and `context()`, e.g. a server's log), so a
 * wait that timed out fails where it timed out instead of letting a later assertion pass or mislead.
 */
export async function pollUntil<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  tries = 150,
  intervalMs = 100,
  context?: () => string,
): Promise<T> {
  let value = await probe();
  for (let i = 1; !done(value); i++) {
    if (i >= tries) {
      const last = inspect(value, { depth: 4, maxArrayLength: 20, maxStringLength: 300, breakLength: Infinity }).slice(0, 2_000);
      throw new Error(
        `pollUntil: ${String(done)} still false after ${tries} tries ${intervalMs} ms apart (about ${Math.round((tries * intervalMs) / 1000)} s); last value: ${last}${context ? `\n${context()}` : ''}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    value = await probe();
  }
  return value;
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

import { Queue, Worker } from 'bullmq';
import type { FastifyBaseLogger } from 'fastify';
import type { Stores } from '../runtime.js';
import type { Services } from '../services.js';
import { jobOptions, processorOf, QUEUE_NAMES, QUEUES, type QueueName } from './registry.js';
import { schedules } from './schedules.js';

export interface Workers {
  /** Resolves once every repeatable job is scheduled (as soon as Redis answers). */
  scheduled: Promise<void>;
  close(): Promise<void>;
}

/** A warning per queue at most once per interval: BullMQ reports every failed reconnect while Redis is away. */
function throttledWarning(log: FastifyBaseLogger, intervalMs: number) {
  const lastWarned = new Map<string, number>();
  return (queue: string, err: Error) => {
    const now = Date.now();
    if ((lastWarned.get(queue) ?? -Infinity) + intervalMs > now) return;
    lastWarned.set(queue, now);
    log.warn({ queue, err: err.message }, 'queue connection error; BullMQ keeps reconnecting');
  };
}

/**
 * Starts one BullMQ worker per consumed queue of the registry (registry.ts), and upserts the
 * repeatable jobs of schedules.ts so restarts never duplicate them. `queues` limits both to those
 * queues (tests).
 */
export async function startWorkers(
  services: Services,
  stores: Stores,
  log: FastifyBaseLogger,
  options: { queues?: readonly QueueName[] } = {},
): Promise<Workers> {
  const connection = { url: stores.config.redisUrl, maxRetriesPerRequest: null };
  const prefix = stores.config.redisPrefix;
  const repeats = schedules(stores.config);
  const opened: { close(): Promise<void> }[] = [];
  const scheduled: Promise<void>[] = [];
  const warnOncePerMinute = throttledWarning(log, 60_000);
  for (const name of QUEUE_NAMES) {
    if (options.queues && !options.queues.includes(name)) continue;
    const processor = processorOf(name, services);
    if (!processor) continue;
    const worker = new Worker(name, processor, { connection, prefix, concurrency: QUEUES[name].concurrency ?? 4 });
    worker.on('failed', (job, err) => log.error({ queue: name, job: job?.id, err }, 'job failed'));
    // Connection errors while Redis is away: BullMQ reconnects by itself; unlistened, they would crash the process.
    worker.on('error', (err) => warnOncePerMinute(name, err));
    opened.push(worker);
    const repeat = repeats[name];
    if (repeat) {
      const queue = new Queue(name, { connection, prefix, defaultJobOptions: jobOptions(name) });
      queue.on('error', (err) => warnOncePerMinute(name, err));
      // Not awaited: with Redis away at start-up the process still comes up and serves ingest and
      // reads; the schedule is upserted once Redis answers.
      scheduled.push(
        queue
          .upsertJobScheduler(`${name}-schedule`, 'every' in repeat ? { every: repeat.every } : { pattern: repeat.cron, tz: 'UTC' })
          .then(() => {}, (err: unknown) => log.warn({ queue: name, err }, 'repeatable job not scheduled')),
      );
      opened.push(queue);
    }
  }
  return {
    scheduled: Promise.all(scheduled).then(() => {}),
    async close() {
      await Promise.all(opened.map((o) => o.close()));
    },
  };
}

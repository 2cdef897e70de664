import { Queue, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { StoreUnavailableError } from '../platform/store-errors.js';
import { FAIL_FAST_REDIS_OPTIONS } from '../stores/redis.js';
import { jobOptions, QUEUE_NAMES, QUEUES, type PayloadOf, type QueueName } from './registry.js';

const COUNTED_STATES = ['waiting', 'delayed', 'active', 'failed', 'prioritized', 'waiting-children'] as const;

/** Longest a producer call (add, counts) may take, first connection included. */
const PRODUCER_BOUND_MS = 2_000;

/**
 * The API side of the queues: one BullMQ Queue per name, opened on first use with the queue's
 * default job options and closed with the app. Workers consume these queues in workers.ts.
 * add/addBulk are typed by the registry (registry.ts): a payload compiles only in its queue's shape,
 * and the job gets its queue's job name.
 *
 * A producer never waits for Redis: the connection has no offline queue (BullMQ's advice for
 * producers, "Failing fast when Redis is down"), and every call is bounded by PRODUCER_BOUND_MS,
 * because a Queue first used while Redis is away waits for the connection to become ready
 * (RedisConnection.waitUntilReady) however the connection is configured. Such a call rejects
 * with StoreUnavailableError; the edge answers 503 + Retry-After.
 */
export class JobEnqueuer {
  private readonly queues = new Map<QueueName, Queue>();
  private connection: Redis | undefined;
  private connectedOnce = false;

  constructor(
    private readonly redisUrl: string,
    private readonly prefix: string,
  ) {}

  /** Jobs per queue and state, for the queue-depth gauge of GET /metrics. */
  async depths(): Promise<{ queue: string; state: string; count: number }[]> {
    const names = QUEUE_NAMES;
    const counts = await this.bounded('getJobCounts', () =>
      Promise.all(names.map((name) => this.queue(name).getJobCounts(...COUNTED_STATES))),
    );
    return names.flatMap((queue, i) => Object.entries(counts[i]!).map(([state, count]) => ({ queue, state, count })));
  }

  async add<Q extends QueueName>(name: Q, payload: PayloadOf<Q>, options: JobsOptions = {}): Promise<void> {
    await this.bounded('add', () => this.queue(name).add(QUEUES[name].jobName, payload, options));
  }

  /** Many jobs of one queue in one round trip. */
  async addBulk<Q extends QueueName>(name: Q, payloads: readonly PayloadOf<Q>[]): Promise<void> {
    if (payloads.length === 0) return;
    const jobName = QUEUES[name].jobName;
    await this.bounded('addBulk', () => this.queue(name).addBulk(payloads.map((data) => ({ name: jobName, data }))));
  }

  async close(): Promise<void> {
    const open = [...this.queues.values()];
    this.queues.clear();
    await Promise.all(open.map((q) => q.close()));
    this.connection?.disconnect();
    this.connection = undefined;
  }

  /**
   * Runs `call` once the connection is ready, within PRODUCER_BOUND_MS. A connection that was
   * ready before and is not now fails at once; only the first connection of the process is waited
   * for. No queue is touched before the connection is ready, so no call sits waiting for Redis to
   * come back and then runs long after its caller was answered 503.
   */
  private async bounded<T>(op: string, call: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + PRODUCER_BOUND_MS;
    const connection = this.connect();
    if (connection.status !== 'ready') {
      if (this.connectedOnce) throw new StoreUnavailableError('redis', `queue connection is ${connection.status}`);
      await this.firstReady(connection, PRODUCER_BOUND_MS);
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        call(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new StoreUnavailableError('redis', `queue ${op} took longer than ${PRODUCER_BOUND_MS} ms`)),
            Math.max(0, deadline - Date.now()),
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  private connect(): Redis {
    if (!this.connection) {
      // One connection serves every queue of this process.
      const connection = new Redis(this.redisUrl, FAIL_FAST_REDIS_OPTIONS);
      connection.on('ready', () => {
        this.connectedOnce = true;
      });
      // Failures surface as rejected calls; the outage is reported where those land.
      connection.on('error', () => {});
      this.connection = connection;
    }
    return this.connection;
  }

  private firstReady(connection: Redis, ms: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer);
        connection.off('ready', onReady);
        if (err) reject(err);
        else resolve();
      };
      const onReady = () => done();
      const timer = setTimeout(() => done(new StoreUnavailableError('redis', `queue connection not ready within ${ms} ms`)), ms);
      connection.once('ready', onReady);
    });
  }

  private queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, {
        connection: this.connect(),
        prefix: this.prefix,
        defaultJobOptions: jobOptions(name),
      });
      // Connection errors surface as rejected add() calls; without a listener they would crash the process.
      queue.on('error', () => {});
      this.queues.set(name, queue);
    }
    return queue;
  }
}

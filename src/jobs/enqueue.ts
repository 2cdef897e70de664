import { Queue, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { jobOptions, QUEUES, type QueueName } from './queues.js';

const COUNTED_STATES = ['waiting', 'delayed', 'active', 'failed', 'prioritized', 'waiting-children'] as const;

/**
 * The API side of the queues: one BullMQ Queue per name, opened on first use with the queue's
 * default job options and closed with the app. Workers consume these queues in workers.ts.
 */
export class JobEnqueuer {
  private readonly queues = new Map<QueueName, Queue>();
  private connection: Redis | undefined;

  constructor(
    private readonly redisUrl: string,
    private readonly prefix: string,
  ) {}

  /** Jobs per queue and state, for the queue-depth gauge of GET /metrics. */
  async depths(): Promise<{ queue: string; state: string; count: number }[]> {
    const names = Object.keys(QUEUES) as QueueName[];
    const counts = await Promise.all(names.map((name) => this.queue(name).getJobCounts(...COUNTED_STATES)));
    return names.flatMap((queue, i) => Object.entries(counts[i]!).map(([state, count]) => ({ queue, state, count })));
  }

  async add(name: QueueName, jobName: string, data: Record<string, unknown>, options: JobsOptions = {}): Promise<void> {
    await this.queue(name).add(jobName, data, options);
  }

  async close(): Promise<void> {
    const open = [...this.queues.values()];
    this.queues.clear();
    await Promise.all(open.map((q) => q.close()));
    this.connection?.disconnect();
    this.connection = undefined;
  }

  private queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      // A producer fails fast when Redis is away: the request answers 503 and its client retries.
      // One connection serves every queue of this process (producers never block on it).
      this.connection ??= new Redis(this.redisUrl, { maxRetriesPerRequest: 2 });
      queue = new Queue(name, {
        connection: this.connection,
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

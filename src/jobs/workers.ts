import { Queue, Worker, type Processor } from 'bullmq';
import type { FastifyBaseLogger } from 'fastify';
import type { Stores } from '../runtime.js';
import { datasetRunJob } from '../modules/datasets/schemas.js';
import { controlJob } from '../modules/control/schemas.js';
import { evalJob } from '../modules/evals/schemas.js';
import { promptJob } from '../modules/prompts/schemas.js';
import { requestJob } from '../modules/privacy/schemas.js';
import { webhookDeliveryJob } from '../modules/webhooks/schemas.js';
import type { Config } from '../config.js';
import type { Services } from '../services.js';
import { jobOptions, type QueueName } from './queues.js';

/** OTLP trace rows rebuilt per reconcile pass (traces whose writer died mid-commit: rare). */
const OWED_ROWS_PAGE = 1_000;

export interface Workers {
  /** Resolves once every repeatable job is scheduled (as soon as Redis answers). */
  scheduled: Promise<void>;
  close(): Promise<void>;
}

interface Registration {
  queue: QueueName;
  processor: Processor;
  /** Repeatable schedule (cron, UTC), when the queue runs on a clock. */
  cron?: string;
  /** Repeatable every this many ms (instead of a cron pattern), when the period is configurable. */
  every?: number;
  /** Jobs one worker runs at once (default 4); jobs that mostly wait on a vendor want more. */
  concurrency?: number;
}

function registrations(services: Services, log: FastifyBaseLogger, config: Config): Registration[] {
  return [
    {
      queue: 'retention',
      every: config.retention.intervalMs,
      // One sweep at a time (also across processes: RetentionService takes an advisory lock).
      // Idempotent: each sweep removes whatever is expired then; a failed one is retried, then redone
      // by the next.
      concurrency: 1,
      processor: async () => {
        const result = await services.retention.sweep();
        return { skipped: result.skipped, projects: result.projects.length, dropped: result.dropped };
      },
    },
    {
      queue: 'audit-anchor',
      cron: '15 0 * * *',
      // Idempotent: anchored (tenant, day) pairs are skipped, so the last week's missed days are made
      // up; a failure (e.g. a broken chain) fails the job loudly.
      processor: async () => {
        const runs = await services.auditAnchors.anchorRecentDaysForAllTenants();
        const failed = runs.filter((run) => run.failures.length > 0);
        if (failed.length > 0) throw new Error(`audit anchoring failed: ${JSON.stringify(failed.map((r) => ({ date: r.date, failures: r.failures })))}`);
        return runs.map((run) => ({ date: run.date, anchors: run.anchors.length }));
      },
    },
    {
      queue: 'ingest-reconcile',
      cron: '*/10 * * * * *',
      // Idempotent: everything it does is re-derived from the registry and ClickHouse each pass.
      processor: async () => {
        const settled = await services.traceRegistry.settleAbandoned();
        const rebuilt = await services.ingestWrites.rebuildOwed(OWED_ROWS_PAGE);
        await services.traceRegistry.forgetRetiredWriters();
        return { ...settled, rebuilt_otlp_rows: rebuilt };
      },
    },
    {
      queue: 'evals',
      concurrency: 16,
      // Idempotent: the evaluation row is claimed before scoring, so a duplicate job finds it taken
      // or finished and does nothing. Provider failures finish it as failed; store errors retry.
      processor: async (job) => {
        const payload = evalJob.safeParse(job.data);
        if (!payload.success) return { status: 'malformed' };
        const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
        return { status: await services.evals.process(payload.data.eval_id, lastAttempt) };
      },
    },
    {
      queue: 'eval-rules',
      cron: '*/2 * * * * *',
      // Idempotent: candidates leave the outbox in the transaction that creates their evaluations.
      processor: async () => services.onlineEvals.drain(),
    },
    {
      queue: 'evals-reconcile',
      cron: '*/30 * * * * *',
      processor: async () => ({ requeued: await services.evals.reconcile() }),
    },
    {
      queue: 'dataset-runs',
      // Idempotent: a run is leased to one worker and each result is written once with its
      // counters (DatasetRunService.process); a duplicate job finds the run held or done.
      processor: async (job) => {
        const payload = datasetRunJob.safeParse(job.data);
        if (!payload.success) {
          log.warn({ queue: 'dataset-runs', job: job.id, issues: payload.error.issues }, 'malformed dataset-runs job dropped');
          return { status: 'malformed' };
        }
        return { status: await services.datasetRuns.process(payload.data) };
      },
    },
    {
      queue: 'dataset-runs-reconcile',
      cron: '*/30 * * * * *',
      // Re-adds the jobs of unfinished runs that no worker holds (lost job, dead worker).
      processor: async () => services.datasetRuns.reconcile(),
    },
    {
      queue: 'webhooks',
      concurrency: 16,
      // Idempotent: the dispatch row says whether it is still owed; a failed attempt throws so that
      // BullMQ retries it, the last one dead-letters it (WebhookService.deliver).
      processor: async (job) => {
        const payload = webhookDeliveryJob.safeParse(job.data);
        if (!payload.success) {
          log.warn({ queue: 'webhooks', job: job.id, issues: payload.error.issues }, 'malformed webhooks job dropped');
          return { status: 'malformed' };
        }
        return { status: await services.webhooks.deliver(payload.data) };
      },
    },
    {
      queue: 'webhooks-reconcile',
      cron: '*/2 * * * * *',
      processor: async () => services.webhooks.reconcile(),
    },
    {
      queue: 'failures-detect',
      cron: '*/2 * * * * *',
      // Idempotent: candidates leave the outbox in the transaction that grows their clusters.
      processor: async () => services.failureDetector.drain(),
    },
    {
      queue: 'control',
      // Idempotent: the action is claimed before its provider call; a duplicate job finds it taken or done.
      processor: async (job) => {
        const payload = controlJob.safeParse(job.data);
        if (!payload.success) return { status: 'malformed' };
        const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
        return { status: await services.controlExecutor.process(payload.data.action_id, lastAttempt) };
      },
    },
    {
      queue: 'control-scan',
      cron: '*/2 * * * * *',
      // One pass at a time; each step is idempotent (unique chain roots and successors, settled_at).
      concurrency: 1,
      processor: async () => ({ started: await services.controlTrigger.pass(), ...(await services.controlSettler.pass()) }),
    },
    {
      queue: 'prompts',
      // Idempotent: a deployment leaves proposed by a conditional move, and an A/B run holds a lease.
      processor: async (job) => {
        const payload = promptJob.safeParse(job.data);
        if (!payload.success) return { status: 'malformed' };
        const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
        return { status: await services.promptLifecycle.run(payload.data.tenant_id, payload.data.deployment_id, lastAttempt) };
      },
    },
    {
      queue: 'prompts-lifecycle',
      cron: '*/2 * * * * *',
      // One pass at a time; every move in it is conditional on the state it read.
      concurrency: 1,
      processor: async () => services.promptLifecycle.pass(),
    },
    {
      queue: 'anomalies',
      cron: '0 * * * * *',
      // Idempotent: an anomaly is stored once per (project, metric, window); a rescan adds nothing.
      processor: async () => services.anomalies.scan(),
    },
    {
      queue: 'metrics-rollup',
      cron: '*/5 * * * * *',
      // Idempotent: recomputes dirty (tenant, minute) rollup slices from traces FINAL.
      processor: async () => services.metricsRollup.drain(),
    },
    {
      queue: 'search-embed',
      cron: '*/5 * * * * *',
      // One pass at a time: two would embed the same spans twice (harmless, but billed twice).
      concurrency: 1,
      processor: async () => services.spanEmbedder.drain(),
    },
    {
      queue: 'search-index',
      cron: '*/30 * * * * *',
      // One pass at a time: HNSW builds are the heaviest background work; two would race on watermarks.
      concurrency: 1,
      processor: async () => services.hnswIndexer.pass(),
    },
    {
      queue: 'data-subject-requests',
      // Idempotent: the request is claimed before it runs; an erasure remembers which traces it
      // counted and erased, an export starts its file again (DataSubjectRequestService.process).
      concurrency: 1,
      processor: async (job) => {
        const payload = requestJob.safeParse(job.data);
        if (!payload.success) {
          log.warn({ queue: 'data-subject-requests', job: job.id, issues: payload.error.issues }, 'malformed data-subject-requests job dropped');
          return { status: 'malformed' };
        }
        return { status: await services.dataSubjectRequests.process(payload.data.request_id) };
      },
    },
    {
      queue: 'data-subject-requests-reconcile',
      cron: '*/30 * * * * *',
      processor: async () => services.dataSubjectRequests.reconcile(),
    },
  ];
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

/** Starts one BullMQ worker per registered queue; repeatable jobs are upserted so restarts never duplicate them. */
export async function startWorkers(
  services: Services,
  stores: Stores,
  log: FastifyBaseLogger,
  options: { queues?: readonly QueueName[] } = {},
): Promise<Workers> {
  const connection = { url: stores.config.redisUrl, maxRetriesPerRequest: null };
  const prefix = stores.config.redisPrefix;
  const opened: { close(): Promise<void> }[] = [];
  const schedules: Promise<void>[] = [];
  const warnOncePerMinute = throttledWarning(log, 60_000);
  for (const reg of registrations(services, log, stores.config)) {
    if (options.queues && !options.queues.includes(reg.queue)) continue;
    const worker = new Worker(reg.queue, reg.processor, { connection, prefix, concurrency: reg.concurrency ?? 4 });
    worker.on('failed', (job, err) => log.error({ queue: reg.queue, job: job?.id, err }, 'job failed'));
    // Connection errors while Redis is away: BullMQ reconnects by itself; unlistened, they would crash the process.
    worker.on('error', (err) => warnOncePerMinute(reg.queue, err));
    opened.push(worker);
    if (reg.cron || reg.every) {
      const queue = new Queue(reg.queue, { connection, prefix, defaultJobOptions: jobOptions(reg.queue) });
      queue.on('error', (err) => warnOncePerMinute(reg.queue, err));
      // Not awaited: with Redis away at start-up the process still comes up and serves ingest and
      // reads; the schedule is upserted once Redis answers.
      schedules.push(
        queue
          .upsertJobScheduler(`${reg.queue}-schedule`, reg.every ? { every: reg.every } : { pattern: reg.cron!, tz: 'UTC' })
          .then(() => {}, (err: unknown) => log.warn({ queue: reg.queue, err }, 'repeatable job not scheduled')),
      );
      opened.push(queue);
    }
  }
  return {
    scheduled: Promise.all(schedules).then(() => {}),
    async close() {
      await Promise.all(opened.map((o) => o.close()));
    },
  };
}

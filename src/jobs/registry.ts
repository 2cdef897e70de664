import { UnrecoverableError, type DefaultJobOptions, type Job } from 'bullmq';
import { z } from 'zod';
import { controlJob } from '../modules/control/schemas.js';
import { datasetRunJob } from '../modules/datasets/schemas.js';
import { evalJob } from '../modules/evals/schemas.js';
import { requestJob } from '../modules/privacy/schemas.js';
import { promptJob } from '../modules/prompts/schemas.js';
import { webhookDeliveryJob } from '../modules/webhooks/schemas.js';
import type { Services } from '../services.js';

/**
 * The job registry: every queue of DESIGN.md §6, in two tables keyed by queue name.
 *
 * - QUEUES: what a job carries (its zod payload), how BullMQ retries it and how many one worker
 *   runs at once. Producers enqueue through JobEnqueuer (enqueue.ts), typed by `payload`.
 * - PROCESSORS: what a worker does with a job, a thin call into the owning module's service,
 *   given the payload validated against `accepts` (processorOf). Every processor is idempotent (a
 *   job may run twice: BullMQ is at-least-once and the reconcile sweeps re-queue); each entry says why.
 *
 * workers.ts starts one worker per processor, and the repeatable jobs from schedules.ts. (Two
 * tables, not one: producers' types come from QUEUES, and the services those producers live in
 * are what PROCESSORS call, so one table would type itself through Services.)
 *
 * Payloads: a per-entity job carries the `tenant_id` of what it works on, besides that entity's
 * id. A sweep (a repeatable pass over every tenant's rows, scheduled in schedules.ts) is not per
 * tenant and carries nothing: its payload is `sweep`.
 */

/** A sweep's payload: none. Not per tenant: one pass works through every tenant's rows. */
const sweep = z.object({});

/**
 * Jobs queued before their payload carried `tenant_id` may still be in Redis after a deploy (queues
 * outlive it), so the processor accepts them without: it reads the entity by id, which knows its tenant.
 */
const tenantOptional = { tenant_id: z.guid().optional() };

interface QueueSpec<P extends z.ZodType, A extends z.ZodType, O extends DefaultJobOptions> {
  /** BullMQ's name for the jobs producers add. */
  jobName: string;
  /** What a producer enqueues: JobEnqueuer.add(queue, payload) compiles with this shape only. */
  payload: P;
  /** What the processor accepts: `payload`, or wider where jobs of an older shape may still be queued. */
  accepts: A;
  /** Retry policy of every job of the queue (jobOptions adds what Redis keeps of finished jobs). */
  options: O;
  /** Jobs one worker runs at once (default 4); jobs that mostly wait on a vendor want more. */
  concurrency?: number;
}

function queue<P extends z.ZodType, const O extends DefaultJobOptions, A extends z.ZodType = P>(
  spec: Omit<QueueSpec<P, A, O>, 'accepts'> & { accepts?: A },
): QueueSpec<P, A, O> {
  return { ...spec, accepts: (spec.accepts ?? spec.payload) as A };
}

export const QUEUES = {
  evals: queue({
    jobName: 'score',
    payload: evalJob,
    accepts: evalJob.extend(tenantOptional),
    options: { attempts: 5, backoff: { type: 'exponential', delay: 2_000 } },
    concurrency: 16,
  }),
  'dataset-runs': queue({
    jobName: 'run',
    payload: datasetRunJob,
    options: { attempts: 3, backoff: { type: 'exponential', delay: 5_000 } },
  }),
  webhooks: queue({
    jobName: 'deliver',
    payload: webhookDeliveryJob,
    options: { attempts: 8, backoff: { type: 'exponential', delay: 5_000 } },
    concurrency: 16,
  }),
  // Declared (DESIGN.md §6) and counted by the queue-depth gauge, but nothing produces or consumes
  // it (failure detection runs as the `failures-detect` sweep): no payload type-checks.
  failures: queue({
    jobName: 'detect',
    payload: z.never(),
    options: { attempts: 5, backoff: { type: 'exponential', delay: 2_000 } },
  }),
  control: queue({
    jobName: 'execute',
    payload: controlJob,
    accepts: controlJob.extend(tenantOptional),
    options: { attempts: 5, backoff: { type: 'exponential', delay: 2_000 } },
  }),
  prompts: queue({
    jobName: 'run',
    payload: promptJob,
    options: { attempts: 5, backoff: { type: 'exponential', delay: 5_000 } },
  }),
  // Per data-subject request (export or erasure); the request row counts attempts across jobs.
  'data-subject-requests': queue({
    jobName: 'process',
    payload: requestJob,
    options: { attempts: 5, backoff: { type: 'exponential', delay: 10_000 } },
    concurrency: 1,
  }),
  // The sweeps (schedules.ts says when each runs). Those of attempts 1: a failed pass is simply
  // redone by the next one.
  anomalies: queue({
    jobName: 'scan',
    payload: sweep,
    options: { attempts: 3, backoff: { type: 'exponential', delay: 30_000 } },
  }),
  'audit-anchor': queue({
    jobName: 'anchor',
    payload: sweep,
    options: { attempts: 10, backoff: { type: 'exponential', delay: 60_000 } },
  }),
  retention: queue({
    jobName: 'sweep',
    payload: sweep,
    options: { attempts: 3, backoff: { type: 'exponential', delay: 60_000 } },
    concurrency: 1,
  }),
  'metrics-rollup': queue({ jobName: 'rollup', payload: sweep, options: { attempts: 1 } }),
  'eval-rules': queue({ jobName: 'drain', payload: sweep, options: { attempts: 1 } }),
  'evals-reconcile': queue({ jobName: 'reconcile', payload: sweep, options: { attempts: 1 } }),
  'dataset-runs-reconcile': queue({ jobName: 'reconcile', payload: sweep, options: { attempts: 1 } }),
  'ingest-reconcile': queue({ jobName: 'reconcile', payload: sweep, options: { attempts: 1 } }),
  'search-embed': queue({ jobName: 'embed', payload: sweep, options: { attempts: 1 }, concurrency: 1 }),
  'search-index': queue({ jobName: 'index', payload: sweep, options: { attempts: 1 }, concurrency: 1 }),
  'webhooks-reconcile': queue({ jobName: 'reconcile', payload: sweep, options: { attempts: 1 } }),
  'failures-detect': queue({ jobName: 'drain', payload: sweep, options: { attempts: 1 } }),
  'control-scan': queue({ jobName: 'scan', payload: sweep, options: { attempts: 1 }, concurrency: 1 }),
  'prompts-lifecycle': queue({ jobName: 'pass', payload: sweep, options: { attempts: 1 }, concurrency: 1 }),
  'data-subject-requests-reconcile': queue({ jobName: 'reconcile', payload: sweep, options: { attempts: 1 } }),
};

export type QueueName = keyof typeof QUEUES;
export const QUEUE_NAMES = Object.keys(QUEUES) as QueueName[];

/** What a producer passes to JobEnqueuer.add for queue Q. */
export type PayloadOf<Q extends QueueName> = z.input<(typeof QUEUES)[Q]['payload']>;
/** What queue Q's processor is handed: the payload as accepted (older shapes included). */
export type AcceptedOf<Q extends QueueName> = z.output<(typeof QUEUES)[Q]['accepts']>;

/** Queue options as BullMQ's default job options: the retry policy, and how many finished jobs Redis keeps. */
export const jobOptions = (name: QueueName): DefaultJobOptions => ({
  ...QUEUES[name].options,
  removeOnComplete: { count: 1_000 },
  removeOnFail: { count: 10_000 },
});

type Process<Q extends QueueName> = (services: Services, payload: AcceptedOf<Q>, job: Job) => Promise<unknown>;

/** OTLP trace rows rebuilt per reconcile pass (traces whose writer died mid-commit: rare). */
const OWED_ROWS_PAGE = 1_000;

/** Whether this run is the job's last attempt: per-entity processors then record the failure instead of releasing the entity. */
const lastAttempt = (job: Job): boolean => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);

/** Each queue's processor; null for a queue nobody consumes. */
export const PROCESSORS: { [Q in QueueName]: Process<Q> | null } = {
  // Idempotent: the evaluation row is claimed before scoring, so a duplicate job finds it taken
  // or finished and does nothing. Provider failures finish it as failed; store errors retry.
  evals: async (s, p, job) => ({ status: await s.evals.process(p.eval_id, lastAttempt(job)) }),
  // Idempotent: a run is leased to one worker and each result is written once with its
  // counters (DatasetRunService.process); a duplicate job finds the run held or done.
  'dataset-runs': async (s, p) => ({ status: await s.datasetRuns.process(p) }),
  // Idempotent: the dispatch row says whether it is still owed; a failed attempt throws so that
  // BullMQ retries it, the last one dead-letters it (WebhookService.deliver).
  webhooks: async (s, p) => ({ status: await s.webhooks.deliver(p) }),
  failures: null,
  // Idempotent: the action is claimed before its provider call; a duplicate job finds it taken or done.
  control: async (s, p, job) => ({ status: await s.controlExecutor.process(p.action_id, lastAttempt(job)) }),
  // Idempotent: a deployment leaves proposed by a conditional move, and an A/B run holds a lease.
  prompts: async (s, p, job) => ({ status: await s.promptLifecycle.run(p.tenant_id, p.deployment_id, lastAttempt(job)) }),
  // Idempotent: the request is claimed before it runs; an erasure remembers which traces it
  // counted and erased, an export starts its file again (DataSubjectRequestService.process).
  'data-subject-requests': async (s, p) => ({ status: await s.dataSubjectRequests.process(p.request_id) }),
  // Idempotent: an anomaly is stored once per (project, metric, window); a rescan adds nothing.
  anomalies: async (s) => s.anomalies.scan(),
  // Idempotent: anchored (tenant, day) pairs are skipped, so the last week's missed days are made
  // up; a failure (e.g. a broken chain) fails the job loudly.
  'audit-anchor': async (s) => {
    const runs = await s.auditAnchors.anchorRecentDaysForAllTenants();
    const failed = runs.filter((run) => run.failures.length > 0);
    if (failed.length > 0) throw new Error(`audit anchoring failed: ${JSON.stringify(failed.map((r) => ({ date: r.date, failures: r.failures })))}`);
    return runs.map((run) => ({ date: run.date, anchors: run.anchors.length }));
  },
  // One sweep at a time (also across processes: RetentionService takes an advisory lock).
  // Idempotent: each sweep removes whatever is expired then; a failed one is retried, then redone
  // by the next.
  retention: async (s) => {
    const result = await s.retention.sweep();
    return { skipped: result.skipped, projects: result.projects.length, dropped: result.dropped };
  },
  // Idempotent: recomputes dirty (tenant, minute) rollup slices from traces FINAL.
  'metrics-rollup': async (s) => s.metricsRollup.drain(),
  // Enabled eval rules look at newly stored traces (eval_candidates outbox). Idempotent:
  // candidates leave the outbox in the transaction that creates their evaluations.
  'eval-rules': async (s) => s.onlineEvals.drain(),
  // Re-enqueues evaluations whose job was lost (Redis outage at enqueue, Redis data loss) or whose
  // worker died mid-run; the claim makes a duplicate harmless.
  'evals-reconcile': async (s) => ({ requeued: await s.evals.reconcile() }),
  // Re-adds the jobs of unfinished runs that no worker holds (lost job, dead worker).
  'dataset-runs-reconcile': async (s) => s.datasetRuns.reconcile(),
  // Settles abandoned trace reservations, rebuilds the rows of OTLP traces they left owed.
  // Idempotent: everything it does is re-derived from the registry and ClickHouse each pass.
  'ingest-reconcile': async (s) => {
    const settled = await s.traceRegistry.settleAbandoned();
    const rebuilt = await s.ingestWrites.rebuildOwed(OWED_ROWS_PAGE);
    await s.traceRegistry.forgetRetiredWriters();
    return { ...settled, rebuilt_otlp_rows: rebuilt };
  },
  // Embeds opted-in projects' spans that came without a vector. One pass at a time: two would
  // embed the same spans twice (harmless, but billed twice).
  'search-embed': async (s) => s.spanEmbedder.drain(),
  // Copies big projects' new vectors into their HNSW tables. One pass at a time: HNSW builds are
  // the heaviest background work; two would race on watermarks.
  'search-index': async (s) => s.hnswIndexer.pass(),
  // Queues webhook dispatches committed in an emitter's transaction, and re-queues those whose job was lost.
  'webhooks-reconcile': async (s) => s.webhooks.reconcile(),
  // Failure rules look at newly stored traces (failure_candidates outbox). Idempotent: candidates
  // leave the outbox in the transaction that grows their clusters.
  'failures-detect': async (s) => s.failureDetector.drain(),
  // Starts chains of policies whose trigger matched, judges executed actions. One pass at a time;
  // each step is idempotent (unique chain roots and successors, settled_at).
  'control-scan': async (s) => ({ started: await s.controlTrigger.pass(), ...(await s.controlSettler.pass()) }),
  // Automatic prompt-deployment moves (proposals, autoship, monitoring, rollback). One pass at a
  // time; every move in it is conditional on the state it read.
  'prompts-lifecycle': async (s) => s.promptLifecycle.pass(),
  // Re-queues data-subject requests whose job was lost or whose worker died, and deletes expired export files.
  'data-subject-requests-reconcile': async (s) => s.dataSubjectRequests.reconcile(),
};

/**
 * The BullMQ processor of `name` (null when the queue has none): validates the job's payload
 * against the queue's `accepts`, then runs its processor. A payload of the wrong shape fails its
 * job at once (UnrecoverableError: no retries, it could never succeed), saying what was wrong;
 * the worker's `failed` listener logs it.
 */
export function processorOf(name: QueueName, services: Services): ((job: Job) => Promise<unknown>) | null {
  const process = PROCESSORS[name] as Process<QueueName> | null;
  if (!process) return null;
  const accepts: z.ZodType = QUEUES[name].accepts;
  return async (job) => {
    const parsed = accepts.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`malformed ${name} payload: ${z.prettifyError(parsed.error)}`);
    return process(services, parsed.data as AcceptedOf<QueueName>, job);
  };
}

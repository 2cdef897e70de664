import type { DefaultJobOptions } from 'bullmq';

/**
 * Every queue of DESIGN.md §6 with its retry policy. Areas register processors for their own
 * queues in workers.ts as they are built; a queue without a processor is simply not consumed.
 */
export const QUEUES = {
  evals: { attempts: 5, backoff: { type: 'exponential', delay: 2_000 } },
  'dataset-runs': { attempts: 3, backoff: { type: 'exponential', delay: 5_000 } },
  webhooks: { attempts: 8, backoff: { type: 'exponential', delay: 5_000 } },
  failures: { attempts: 5, backoff: { type: 'exponential', delay: 2_000 } },
  control: { attempts: 5, backoff: { type: 'exponential', delay: 2_000 } },
  prompts: { attempts: 5, backoff: { type: 'exponential', delay: 5_000 } },
  anomalies: { attempts: 3, backoff: { type: 'exponential', delay: 30_000 } },
  'audit-anchor': { attempts: 10, backoff: { type: 'exponential', delay: 60_000 } },
  retention: { attempts: 3, backoff: { type: 'exponential', delay: 60_000 } },
  // Repeatable every 5 s; a failed pass is simply redone by the next one (claims are leased).
  'metrics-rollup': { attempts: 1 },
  // Repeatable every 2 s: enabled eval rules look at newly stored traces (eval_candidates outbox).
  'eval-rules': { attempts: 1 },
  // Repeatable every 30 s: re-enqueues evaluations and dataset runs whose job was lost (Redis
  // outage at enqueue, Redis data loss) or whose worker died mid-run.
  'evals-reconcile': { attempts: 1 },
  'dataset-runs-reconcile': { attempts: 1 },
  // Repeatable every 10 s: settles abandoned trace reservations, rebuilds the rows of OTLP traces they left owed.
  'ingest-reconcile': { attempts: 1 },
  // Repeatable every 5 s: embeds opted-in projects' spans that came without a vector.
  'search-embed': { attempts: 1 },
  // Repeatable every 30 s: copies big projects' new vectors into their HNSW tables.
  'search-index': { attempts: 1 },
  // Repeatable every 2 s: queues webhook dispatches committed in an emitter's transaction, and
  // re-queues those whose job was lost.
  'webhooks-reconcile': { attempts: 1 },
  // Repeatable every 2 s: failure rules look at newly stored traces (failure_candidates outbox).
  'failures-detect': { attempts: 1 },
  // Repeatable every 2 s: starts chains of policies whose trigger matched, judges executed actions.
  'control-scan': { attempts: 1 },
  // Repeatable every 2 s: automatic prompt-deployment moves (proposals, autoship, monitoring, rollback).
  'prompts-lifecycle': { attempts: 1 },
  // Per data-subject request (export or erasure); the request row counts attempts across jobs.
  'data-subject-requests': { attempts: 5, backoff: { type: 'exponential', delay: 10_000 } },
  // Repeatable every 30 s: re-queues data-subject requests whose job was lost or whose worker
  // died, and deletes expired export files.
  'data-subject-requests-reconcile': { attempts: 1 },
} as const satisfies Record<string, DefaultJobOptions>;

export type QueueName = keyof typeof QUEUES;

export const jobOptions = (name: QueueName): DefaultJobOptions => ({
  ...QUEUES[name],
  removeOnComplete: { count: 1_000 },
  removeOnFail: { count: 10_000 },
});

import type { Config } from '../config.js';
import type { QueueName } from './registry.js';

/** When a repeatable queue runs: a cron pattern (UTC, seconds first when six fields) or every this many ms. */
export type Schedule = { cron: string } | { every: number };

/**
 * Every repeatable job, in one table: the sweeps of registry.ts. workers.ts upserts one BullMQ job
 * scheduler per row (`<queue>-schedule`), so a restart never duplicates one. A queue missing
 * here runs only when a producer adds a job.
 */
export function schedules(config: Pick<Config, 'retention'>): Partial<Record<QueueName, Schedule>> {
  return {
    'eval-rules': { cron: '*/2 * * * * *' },
    'failures-detect': { cron: '*/2 * * * * *' },
    'webhooks-reconcile': { cron: '*/2 * * * * *' },
    'control-scan': { cron: '*/2 * * * * *' },
    'prompts-lifecycle': { cron: '*/2 * * * * *' },
    'metrics-rollup': { cron: '*/5 * * * * *' },
    'search-embed': { cron: '*/5 * * * * *' },
    'ingest-reconcile': { cron: '*/10 * * * * *' },
    'evals-reconcile': { cron: '*/30 * * * * *' },
    'dataset-runs-reconcile': { cron: '*/30 * * * * *' },
    'search-index': { cron: '*/30 * * * * *' },
    'data-subject-requests-reconcile': { cron: '*/30 * * * * *' },
    anomalies: { cron: '0 * * * * *' },
    // Every LOOPTRACE_RETENTION_INTERVAL_MS (1 h by default).
    retention: { every: config.retention.intervalMs },
    // Daily at 00:15 UTC, for the day that just ended.
    'audit-anchor': { cron: '15 0 * * *' },
  };
}

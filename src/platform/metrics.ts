import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * One registry per process. Store timings are recorded from the store wrappers, which know
 * nothing of the app instance, so the registry is module-level rather than per app.
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request latency by route and status',
  labelNames: ['method', 'route', 'status_code'] as const,
  buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [metricsRegistry],
});

const storeCallDuration = new Histogram({
  name: 'store_call_duration_seconds',
  help: 'Latency of calls to Postgres, Redis and ClickHouse by operation',
  labelNames: ['store', 'op'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
  registers: [metricsRegistry],
});

const storeCallErrors = new Counter({
  name: 'store_call_errors_total',
  help: 'Failed calls to Postgres, Redis and ClickHouse by operation',
  labelNames: ['store', 'op'] as const,
  registers: [metricsRegistry],
});

export type StoreName = 'postgres' | 'redis' | 'clickhouse';

export async function observeStoreCall<T>(store: StoreName, op: string, call: () => Promise<T>): Promise<T> {
  const end = storeCallDuration.startTimer({ store, op });
  try {
    return await call();
  } catch (err) {
    storeCallErrors.inc({ store, op });
    throw err;
  } finally {
    end();
  }
}

/**
 * Rate limiters of this process counting in per-process windows because Redis is unavailable
 * (0 or 1 in a server; tests may hold several limiters).
 */
export const rateLimitRedisFallback = new Gauge({
  name: 'ratelimit_redis_fallback',
  help: '1 while rate limiting counts in per-process windows because Redis is unavailable, else 0',
  registers: [metricsRegistry],
});

export const rateLimitFallbackDecisions = new Counter({
  name: 'ratelimit_fallback_total',
  help: 'Rate-limit decisions taken from the per-process window instead of Redis, by why Redis was not used',
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});

export type QueueDepthSource = () => Promise<{ queue: string; state: string; count: number }[]>;
const queueDepthSources = new Set<QueueDepthSource>();

new Gauge({
  name: 'queue_jobs',
  help: 'BullMQ jobs by queue and state, read at scrape time',
  labelNames: ['queue', 'state'] as const,
  registers: [metricsRegistry],
  async collect() {
    this.reset();
    for (const source of queueDepthSources) {
      const depths = await source().catch(() => []);
      for (const d of depths) this.set({ queue: d.queue, state: d.state }, d.count);
    }
  },
});

/** Adds a source of queue depths to the gauge; the returned function removes it (app close). */
export function addQueueDepthSource(source: QueueDepthSource): () => void {
  queueDepthSources.add(source);
  return () => queueDepthSources.delete(source);
}

import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import { AppError } from './errors.js';
import { observeStoreCall, rateLimitFallbackDecisions, rateLimitRedisFallback } from './metrics.js';
import { PLANS, type PlanName } from './plans.js';
import { StoreUnavailableError } from './store-errors.js';

export type RateBucket = 'default' | 'query' | 'ingest';

const WINDOW_SECONDS = 60;
/** Longest a request waits for Redis before it is counted in the per-process window instead. */
const REDIS_CALL_BOUND_MS = 250;
/** After a failed or slow Redis call, requests skip Redis this long (then one tries again). */
const REDIS_RETRY_AFTER_MS = 1_000;

export interface RateLimitState {
  limit: number | null;
  remaining: number | null;
  resetSeconds: number;
  exceeded: boolean;
}

export type RateLimitLog = Pick<FastifyBaseLogger, 'warn' | 'info'>;

type FallbackReason = 'not_ready' | 'error' | 'timeout' | 'backoff';

function limitFor(plan: PlanName, bucket: RateBucket): number | null {
  const limits = PLANS[plan];
  if (bucket === 'query') return limits.queryRequestsPerMinute;
  if (bucket === 'ingest') return limits.ingestRequestsPerMinute;
  return limits.defaultRequestsPerMinute;
}

/**
 * The same fixed windows, counted in this process only. Holds the current window's counters and
 * nothing older: a new window (or a clock jump) drops the previous one's.
 */
class LocalWindows {
  private windowStart = Number.NEGATIVE_INFINITY;
  private readonly counts = new Map<string, number>();

  incr(key: string, windowStart: number): number {
    // A straggler of the previous window (computed just before the boundary) is counted, not a reset.
    if (windowStart > this.windowStart || windowStart < this.windowStart - WINDOW_SECONDS) {
      this.windowStart = windowStart;
      this.counts.clear();
    }
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, count);
    return count;
  }
}

const silent: RateLimitLog = { warn: () => {}, info: () => {} };

async function bounded<T>(call: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      call,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new StoreUnavailableError('redis', `rate-limit call took longer than ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Fixed one-minute windows per tenant and bucket, counted in Redis so every replica shares them.
 * Redis holds nothing but these windows and the queues, so a Redis outage must not stop requests:
 * while it is not connected, fails, or is slower than REDIS_CALL_BOUND_MS, requests are counted in
 * a per-process window instead (each replica then allows the full limit), the
 * `ratelimit_redis_fallback` gauge says so, and one warning is logged per outage.
 */
export class RateLimiter {
  private readonly local = new LocalWindows();
  private fallingBack = false;
  /** Counts fallbacks begun: a Redis answer to a call sent before the latest one began ends nothing. */
  private outages = 0;
  private skipRedisUntil = 0;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly log: RateLimitLog = silent,
  ) {}

  async hit(tenantId: string, plan: PlanName, bucket: RateBucket, now = Date.now()): Promise<RateLimitState> {
    const windowStart = Math.floor(now / 1000 / WINDOW_SECONDS) * WINDOW_SECONDS;
    const resetSeconds = windowStart + WINDOW_SECONDS - Math.floor(now / 1000);
    const limit = limitFor(plan, bucket);
    const key = `${this.prefix}:rl:${tenantId}:${bucket}:${windowStart}`;
    const count = await this.count(key, windowStart);
    if (limit === null) return { limit: null, remaining: null, resetSeconds, exceeded: false };
    return { limit, remaining: Math.max(0, limit - count), resetSeconds, exceeded: count > limit };
  }

  /** Whether decisions currently come from the per-process window. */
  get degraded(): boolean {
    return this.fallingBack;
  }

  private async count(key: string, windowStart: number): Promise<number> {
    if (this.redis.status !== 'ready') return this.fallback(key, windowStart, 'not_ready');
    if (Date.now() < this.skipRedisUntil) return this.fallback(key, windowStart, 'backoff');
    const sentDuring = this.outages;
    try {
      const results = await observeStoreCall('redis', 'ratelimit.hit', () =>
        bounded(this.redis.multi().incr(key).expire(key, WINDOW_SECONDS * 2).exec(), REDIS_CALL_BOUND_MS),
      );
      const [incrError, count] = results?.[0] ?? [new Error('rate-limit transaction was discarded'), undefined];
      if (incrError) throw incrError;
      if (sentDuring === this.outages) this.redisAnswered();
      return Number(count);
    } catch (err) {
      this.skipRedisUntil = Date.now() + REDIS_RETRY_AFTER_MS;
      return this.fallback(key, windowStart, err instanceof StoreUnavailableError ? 'timeout' : 'error', err);
    }
  }

  private fallback(key: string, windowStart: number, reason: FallbackReason, err?: unknown): number {
    rateLimitFallbackDecisions.inc({ reason });
    if (!this.fallingBack) {
      this.fallingBack = true;
      this.outages += 1;
      rateLimitRedisFallback.inc();
      this.log.warn(
        { reason, redis_status: this.redis.status, err },
        'rate limiting falls back to per-process windows: Redis is unavailable (each replica now allows the full limit)',
      );
    }
    return this.local.incr(key, windowStart);
  }

  private redisAnswered(): void {
    if (!this.fallingBack) return;
    this.fallingBack = false;
    rateLimitRedisFallback.dec();
    this.log.info('rate limiting uses Redis again');
  }
}

export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    'x-ratelimit-limit': state.limit === null ? 'unlimited' : String(state.limit),
    'x-ratelimit-remaining': state.remaining === null ? 'unlimited' : String(state.remaining),
    'x-ratelimit-reset': String(state.resetSeconds),
  };
}

export function rateLimited(state: RateLimitState): AppError {
  return new AppError(
    429,
    'rate_limited',
    `rate limit of ${state.limit} requests per minute exceeded`,
    { retry_after: state.resetSeconds },
    { 'retry-after': String(state.resetSeconds) },
  );
}

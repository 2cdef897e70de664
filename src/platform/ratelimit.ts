import type { Redis } from 'ioredis';
import { AppError } from './errors.js';
import { observeStoreCall } from './metrics.js';
import { PLANS, type PlanName } from './plans.js';

export type RateBucket = 'default' | 'query' | 'ingest';

const WINDOW_SECONDS = 60;

export interface RateLimitState {
  limit: number | null;
  remaining: number | null;
  resetSeconds: number;
  exceeded: boolean;
}

function limitFor(plan: PlanName, bucket: RateBucket): number | null {
  const limits = PLANS[plan];
  if (bucket === 'query') return limits.queryRequestsPerMinute;
  if (bucket === 'ingest') return limits.ingestRequestsPerMinute;
  return limits.defaultRequestsPerMinute;
}

/** Fixed one-minute windows per tenant and bucket, counted in Redis so every replica shares them. */
export class RateLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async hit(tenantId: string, plan: PlanName, bucket: RateBucket, now = Date.now()): Promise<RateLimitState> {
    const windowStart = Math.floor(now / 1000 / WINDOW_SECONDS) * WINDOW_SECONDS;
    const resetSeconds = windowStart + WINDOW_SECONDS - Math.floor(now / 1000);
    const limit = limitFor(plan, bucket);
    const key = `${this.prefix}:rl:${tenantId}:${bucket}:${windowStart}`;
    const results = await observeStoreCall('redis', 'ratelimit.hit', () =>
      this.redis.multi().incr(key).expire(key, WINDOW_SECONDS * 2).exec(),
    );
    const count = Number(results?.[0]?.[1] ?? 0);
    if (limit === null) return { limit: null, remaining: null, resetSeconds, exceeded: false };
    return { limit, remaining: Math.max(0, limit - count), resetSeconds, exceeded: count > limit };
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

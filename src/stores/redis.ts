import { Redis, type RedisOptions } from 'ioredis';

/** Delay before reconnect attempt `n`: quick at first, then every 2 s for as long as Redis is away. */
export function reconnectDelay(attempt: number): number {
  return Math.min(100 * 2 ** Math.min(attempt - 1, 5), 2_000);
}

/**
 * Options of every connection a request may wait on. No request waits on reconnects: with the
 * offline queue off, a command sent while Redis is away fails at once ("Stream isn't writeable"),
 * and one sent on a connection that stopped answering fails after `commandTimeout`. Reconnects
 * go on in the background (`retryStrategy`), so the client is ready again soon after Redis is.
 * (BullMQ workers open their own connections, which must wait instead: jobs/workers.ts.)
 */
export const FAIL_FAST_REDIS_OPTIONS: RedisOptions = {
  enableOfflineQueue: false,
  commandTimeout: 1_000,
  connectTimeout: 2_000,
  // A command left waiting across reconnects is failed after one attempt (commandTimeout bounds it in time).
  maxRetriesPerRequest: 1,
  retryStrategy: reconnectDelay,
};

export function createRedis(url: string): Redis {
  const redis = new Redis(url, { ...FAIL_FAST_REDIS_OPTIONS, lazyConnect: false });
  // Connection errors repeat on every reconnect attempt; without a listener ioredis prints each one.
  // An outage is reported by /readyz, store_call_errors_total and the rate limiter's fallback warning.
  redis.on('error', () => {});
  return redis;
}

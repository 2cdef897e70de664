import { Redis } from 'ioredis';

export function createRedis(url: string): Redis {
  // BullMQ needs maxRetriesPerRequest: null on connections it blocks on; rate limiting must fail fast.
  return new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
}

export function createBlockingRedis(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null });
}

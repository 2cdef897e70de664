import { Redis } from 'ioredis';

export function createRedis(url: string): Redis {
  // Rate limiting and readiness must fail fast when Redis is away (BullMQ workers open their own connections).
  return new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
}

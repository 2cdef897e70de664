import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { ALL_ROLES, ANY_TOKEN, PUBLIC } from '../../platform/access.js';
import { metricsRegistry } from '../../platform/metrics.js';
import type { ClickHouseStore } from '../../stores/clickhouse.js';
import type { Sql } from '../../stores/pg.js';

const CHECK_TIMEOUT_MS = 2_000;

async function check(probe: () => Promise<unknown>): Promise<'ok' | string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      probe(),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS))),
    ]);
    return 'ok';
  } catch (err) {
    return `error: ${(err as Error).message}`;
  } finally {
    clearTimeout(timer);
  }
}

const readiness = z.object({
  status: z
    .enum(['ready', 'degraded', 'unavailable'])
    .describe('ready: every store answers. degraded (200): only Redis fails; ingest and reads still work. unavailable (503): Postgres or ClickHouse fails.'),
  checks: z
    .object({ postgres: z.string(), redis: z.string(), clickhouse: z.string() })
    .describe('Per store, "ok" or "error: <why>".'),
});

/** A client that is not connected fails every command at once with a note about its offline queue: say what is wrong instead. */
async function pingRedis(redis: Redis): Promise<unknown> {
  if (redis.status !== 'ready') throw new Error(`not connected (${redis.status})`);
  return redis.ping();
}

/** The primary, and with CLICKHOUSE_READ_URL the read URL too: reads fail without the one, writes without the other. */
async function pingClickHouse(ch: ClickHouseStore): Promise<unknown> {
  if (!ch.readsFromReplica) return ch.rows('readyz', 'SELECT 1');
  const named = (which: string) => (err: unknown) => {
    throw new Error(`${which}: ${(err as Error).message}`);
  };
  return Promise.all([
    ch.rowsFromPrimary('readyz', 'SELECT 1').catch(named('CLICKHOUSE_URL')),
    ch.rows('readyz.read', 'SELECT 1').catch(named('CLICKHOUSE_READ_URL')),
  ]);
}

/** The stores readiness asks (the app's own: health needs nothing of app.ts, which registers it). */
export interface HealthDeps {
  sql: Sql;
  redis: Redis;
  ch: ClickHouseStore;
}

export function healthRoutes(deps: HealthDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get('/healthz', {
      config: { access: PUBLIC },
      schema: { tags: ['operations'], summary: 'Liveness: the process answers', response: { 200: z.object({ status: z.literal('ok') }) } },
      handler: async () => ({ status: 'ok' as const }),
    });

    app.get('/readyz', {
      config: { access: PUBLIC },
      schema: {
        tags: ['operations'],
        summary: 'Readiness: whether Postgres, Redis and ClickHouse answer',
        response: { 200: readiness, 503: readiness },
      },
      handler: async (_request, reply) => {
        const [postgres, redis, clickhouse] = await Promise.all([
          check(() => deps.sql`select 1`),
          check(() => pingRedis(deps.redis)),
          check(() => pingClickHouse(deps.ch)),
        ]);
        // Redis holds only rate-limit windows and queues: without it a replica still ingests and
        // serves reads (rate limits fall back per process), so it stays in the load balancer.
        // Postgres or ClickHouse down means requests fail: out it goes.
        const essential = postgres === 'ok' && clickhouse === 'ok';
        const status = !essential ? 'unavailable' : redis === 'ok' ? 'ready' : 'degraded';
        return reply.status(essential ? 200 : 503).send({ status, checks: { postgres, redis, clickhouse } });
      },
    });

    app.get('/metrics', {
      config: { access: PUBLIC },
      schema: { tags: ['operations'], hide: true },
      handler: async (_request, reply) =>
        reply.type(metricsRegistry.contentType).send(await metricsRegistry.metrics()),
    });

    // Under /v1/, so it takes a credential like every API request but the audit verification
    // (spec, Authentication rule 1): any token, role and scope.
    app.get('/v1/openapi.json', {
      config: { access: { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' } },
      schema: { tags: ['operations'], hide: true },
      handler: async () => app.swagger(),
    });
  };
}

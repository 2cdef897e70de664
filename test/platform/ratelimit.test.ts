import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANS } from '../../src/platform/plans.js';
import { RateLimiter, rateLimitHeaders } from '../../src/platform/ratelimit.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext } from '../helpers/app.js';

let ctx: TestContext;
let limiter: RateLimiter;
beforeAll(async () => {
  ctx = await startApp();
  limiter = new RateLimiter(ctx.stores.redis, `${ctx.stores.config.redisPrefix}-ratelimit-test`);
});
afterAll(async () => ctx?.close());

function windowHeaders(res: LightMyRequestResponse) {
  const { 'x-ratelimit-limit': limit, 'x-ratelimit-remaining': remaining, 'x-ratelimit-reset': reset } = res.headers;
  return { limit: String(limit), remaining: Number(remaining), reset: Number(reset) };
}

/** n concurrent hits of one window; `now` is fixed so no test straddles a minute boundary. */
async function hitMany(tenantId: string, plan: Parameters<RateLimiter['hit']>[1], bucket: Parameters<RateLimiter['hit']>[2], n: number, now: number) {
  const states = [];
  for (let done = 0; done < n; done += 500) {
    const chunk = Math.min(500, n - done);
    states.push(...(await Promise.all(Array.from({ length: chunk }, () => limiter.hit(tenantId, plan, bucket, now)))));
  }
  return states;
}

describe('X-RateLimit headers over HTTP', () => {
  it('are on every authenticated response, 2xx and 4xx alike, and Remaining counts down', async () => {
    const t = await createTenant(ctx.app, 'starter');
    const limit = PLANS.starter.defaultRequestsPerMinute!;
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    const requests = [
      { method: 'GET', url: '/v1/projects', headers: t.auth },
      { method: 'GET', url: `/v1/projects/${randomUUID()}`, headers: t.auth }, // 404
      { method: 'POST', url: '/v1/projects', headers: t.auth, payload: {} }, // 422
      { method: 'POST', url: '/v1/projects', headers: viewer, payload: { name: 'x' } }, // 403
      { method: 'GET', url: '/v1/me', headers: t.auth }, // 403 session_required
      { method: 'GET', url: '/v1/apikeys', headers: t.auth },
      { method: 'GET', url: '/v1/no-such-route', headers: t.auth }, // 404 for an unknown route
    ] as const;
    const remaining: number[] = [];
    const statuses: number[] = [];
    for (const r of requests) {
      const res = await ctx.app.inject(r);
      statuses.push(res.statusCode);
      const h = windowHeaders(res);
      expect(h.limit, `${r.method} ${r.url}`).toBe(String(limit));
      expect(h.reset).toBeGreaterThanOrEqual(1);
      expect(h.reset).toBeLessThanOrEqual(60);
      remaining.push(h.remaining);
    }
    expect(statuses).toEqual([200, 404, 422, 403, 403, 200, 404]);
    // Strictly decreasing unless a minute boundary fell between two requests (then it restarts near the limit).
    for (let i = 1; i < remaining.length; i++) {
      if (remaining[i]! >= remaining[i - 1]!) expect(remaining[i]).toBe(limit - 1);
      else expect(remaining[i]).toBe(remaining[i - 1]! - 1);
    }
  });

  it('are absent from unauthenticated responses (no tenant to count against)', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/projects' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('answers 429 rate_limited with Retry-After once a starter tenant exceeds its default-bucket limit', async () => {
    const t = await createTenant(ctx.app, 'starter');
    const limit = PLANS.starter.defaultRequestsPerMinute!;
    // A minute boundary may fall inside the burst; 2 × limit + 1 requests overflow at least one window anyway.
    const cap = 2 * limit + 1;
    let sent = 0;
    let refused: LightMyRequestResponse | undefined;
    let lastAccepted: LightMyRequestResponse | undefined;
    while (!refused && sent < cap) {
      const n = Math.min(200, cap - sent);
      const chunk = await Promise.all(
        Array.from({ length: n }, () => ctx.app.inject({ method: 'GET', url: `/v1/projects/${t.projectId}`, headers: t.auth })),
      );
      sent += n;
      for (const res of chunk) {
        if (res.statusCode === 429) refused ??= res;
        else {
          expect(res.statusCode).toBe(200);
          lastAccepted = res;
        }
      }
    }
    expect(refused, `no 429 after ${sent} requests`).toBeDefined();
    expect(sent).toBeGreaterThan(limit);
    const body = refused!.json();
    expect(body).toMatchObject({ code: 'rate_limited', request_id: expect.any(String) });
    const retryAfter = Number(refused!.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(windowHeaders(refused!)).toMatchObject({ limit: String(limit), remaining: 0 });
    expect(windowHeaders(lastAccepted!).limit).toBe(String(limit));

    // Another tenant has its own window.
    const other = await createTenant(ctx.app, 'starter');
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/projects', headers: other.auth })).statusCode).toBe(200);
  });

  it('never limits an enterprise tenant and says so in the headers', async () => {
    const t = await createTenant(ctx.app, 'enterprise');
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/projects', headers: t.auth });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBe('unlimited');
    expect(res.headers['x-ratelimit-remaining']).toBe('unlimited');
    expect(Number(res.headers['x-ratelimit-reset'])).toBeGreaterThan(0);
  });
});

describe('RateLimiter (real Redis)', () => {
  const now = Date.UTC(2030, 0, 1, 12, 0, 15); // 15 s into a window

  it('gives the query bucket 3600 per minute on starter (60 rps) and refuses the 3601st', async () => {
    const tenant = randomUUID();
    const states = await hitMany(tenant, 'starter', 'query', 3601, now);
    const byRemaining = states.map((s) => s.remaining).sort((a, b) => a! - b!);
    expect(states.every((s) => s.limit === 3600)).toBe(true);
    expect(states.filter((s) => s.exceeded)).toHaveLength(1);
    expect(states.filter((s) => !s.exceeded)).toHaveLength(3600);
    expect(byRemaining.slice(0, 2)).toEqual([0, 0]);
    expect(byRemaining.at(-1)).toBe(3599);
    expect(states[0]!.resetSeconds).toBe(45);
    // The default bucket of the same tenant is untouched.
    const other = await limiter.hit(tenant, 'starter', 'default', now);
    expect(other).toMatchObject({ limit: PLANS.starter.defaultRequestsPerMinute, exceeded: false });
    expect(other.remaining).toBe(PLANS.starter.defaultRequestsPerMinute! - 1);
  });

  it('gives the query bucket 36000 per minute on pro (600 rps)', async () => {
    const tenant = randomUUID();
    const states = await hitMany(tenant, 'pro', 'query', 3601, now);
    expect(states.every((s) => s.limit === 36_000 && !s.exceeded)).toBe(true);
    expect(Math.min(...states.map((s) => s.remaining!))).toBe(36_000 - 3601);
    expect(rateLimitHeaders(states[0]!)['x-ratelimit-limit']).toBe('36000');
  });

  it('starts a new count in the next window', async () => {
    const tenant = randomUUID();
    await hitMany(tenant, 'starter', 'query', 3601, now);
    const next = await limiter.hit(tenant, 'starter', 'query', now + 60_000);
    expect(next).toMatchObject({ limit: 3600, remaining: 3599, exceeded: false });
  });

  it('keeps windows per tenant', async () => {
    const a = randomUUID();
    await hitMany(a, 'starter', 'query', 3601, now);
    const b = await limiter.hit(randomUUID(), 'starter', 'query', now);
    expect(b).toMatchObject({ remaining: 3599, exceeded: false });
  });

  it("never exceeds an enterprise tenant's limit, on any bucket", async () => {
    const tenant = randomUUID();
    for (const bucket of ['default', 'query', 'ingest'] as const) {
      const states = await hitMany(tenant, 'enterprise', bucket, 4000, now);
      expect(states.every((s) => s.limit === null && s.remaining === null && !s.exceeded)).toBe(true);
      expect(rateLimitHeaders(states[0]!)).toMatchObject({ 'x-ratelimit-limit': 'unlimited', 'x-ratelimit-remaining': 'unlimited' });
    }
  });
});

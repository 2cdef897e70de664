import { expect } from 'vitest';
import type { App } from '../../src/app.js';
import type { TestTenant } from './app.js';

/** Creates traces through the real batch ingest endpoint and insists every one was created. */
export async function ingestTraces(app: App, tenant: TestTenant, traces: readonly object[]): Promise<void> {
  const res = await app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: tenant.auth, payload: { traces } });
  expect(res.statusCode, res.body).toBe(201);
}

export type QueryValues = Record<string, string | number | undefined>;

export function withQuery(path: string, query: QueryValues = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

export async function getJson(app: App, tenant: TestTenant, path: string, query: QueryValues = {}) {
  const res = await app.inject({ method: 'GET', url: withQuery(path, query), headers: tenant.auth });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}

/**
 * Sort key reproducing ClickHouse's UUID order: a UUID is compared as two 64-bit halves, the
 * second half (last 16 hex digits) first. Tests use it as an oracle independent of the server.
 */
export const clickHouseUuidKey = (id: string): string => {
  const hex = id.replace(/-/g, '').toLowerCase();
  return hex.slice(16) + hex.slice(0, 16);
};

/** Expected listing order: started_at desc, then id desc in ClickHouse's UUID order. */
export function newestFirst<T extends { id: string; started_at: string }>(traces: readonly T[]): T[] {
  return [...traces].sort((a, b) => {
    if (a.started_at !== b.started_at) return a.started_at < b.started_at ? 1 : -1;
    const ka = clickHouseUuidKey(a.id);
    const kb = clickHouseUuidKey(b.id);
    return ka === kb ? 0 : ka < kb ? 1 : -1;
  });
}

/** Follows next_cursor until has_more is false; fails on a runaway loop. */
export async function listAll(app: App, tenant: TestTenant, path: string, key: string, query: QueryValues = {}) {
  const pages: { id: string }[][] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 100; i += 1) {
    const { status, body } = await getJson(app, tenant, path, { ...query, cursor });
    expect(status, JSON.stringify(body)).toBe(200);
    pages.push(body[key]);
    if (!body.has_more) {
      expect(body.next_cursor).toBeNull();
      return pages;
    }
    expect(typeof body.next_cursor).toBe('string');
    cursor = body.next_cursor;
  }
  throw new Error('pagination did not end');
}

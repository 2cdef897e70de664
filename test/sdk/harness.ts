import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { traceDetail, type TraceDetail } from '../../src/modules/traces/schemas.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { pollUntil } from '../helpers/workers.js';
import { installPackedSdk, type Sdk } from './packed-sdk.js';

export type StoredTrace = TraceDetail;
export type StoredSpan = TraceDetail['spans'][number];

export interface SdkHarness {
  ctx: TestContext;
  /** The app listening on loopback: what the SDK talks to. */
  url: string;
  tenant: TestTenant;
  sdk: Sdk;
  /** The scratch project the tarball is installed in. */
  project: string;
  /** GET /v1/traces/{id} once it is readable, checked against the route's own schema. */
  storedTrace(id: string): Promise<StoredTrace>;
  close(): Promise<void>;
}

export async function startSdkHarness(): Promise<SdkHarness> {
  const [ctx, installed] = await Promise.all([startApp(), installPackedSdk()]);
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  const tenant = await createTenant(ctx.app);
  const storedTrace = async (id: string) => {
    const res = await pollUntil(
      () => ctx.app.inject({ method: 'GET', url: `/v1/traces/${id}`, headers: tenant.auth }),
      (r) => r.statusCode !== 404,
      50,
    );
    expect(res.statusCode, res.body).toBe(200);
    return traceDetail.parse(res.json());
  };
  return {
    ctx,
    url: `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`,
    tenant,
    sdk: installed.sdk,
    project: installed.project,
    storedTrace,
    close: async () => {
      await ctx.close();
      installed.remove();
    },
  };
}

/** The one span of `trace` named `name`. */
export function spanNamed(trace: StoredTrace, name: string): StoredSpan {
  const spans = trace.spans.filter((s) => s.name === name);
  expect(spans, `spans named ${name} in ${trace.spans.map((s) => s.name).join(', ')}`).toHaveLength(1);
  return spans[0]!;
}

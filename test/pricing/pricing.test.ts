import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelPriceList, modelPriceOverride } from '../../src/modules/pricing/schemas.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { queryKeyAuth } from '../builders/resources.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const MILLION = 1_000_000;

/** Ingests a span without a cost (1M prompt + 1M completion tokens) and reads the cost ingest stored. */
async function storedCost(t: TestTenant, model: string): Promise<number> {
  const trace = aTrace({ spans: [aSpan({ model, prompt_tokens: MILLION, completion_tokens: MILLION })] });
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: trace });
  expect(res.statusCode, res.body).toBe(201);
  const [row] = await ctx.stores.ch.rows<{ cost: number }>('test', 'SELECT cost FROM traces FINAL WHERE tenant_id = {t:UUID} AND is_deleted = 0 AND id = {id:UUID}', {
    t: t.tenantId,
    id: trace.id,
  });
  return row!.cost;
}

const list = async (auth: Record<string, string>) => {
  const res = await ctx.app.inject({ method: 'GET', url: '/v1/model-prices', headers: auth });
  expect(res.statusCode, res.body).toBe(200);
  return modelPriceList.parse(res.json());
};
const put = (auth: Record<string, string>, model: string, payload: unknown) =>
  ctx.app.inject({ method: 'PUT', url: `/v1/model-prices/${encodeURIComponent(model)}`, headers: auth, payload: payload as object });
const del = (auth: Record<string, string>, model: string) =>
  ctx.app.inject({ method: 'DELETE', url: `/v1/model-prices/${encodeURIComponent(model)}`, headers: auth });

describe('model prices', () => {
  it('lists the built-in table with its source date, in USD per million tokens', async () => {
    const t = await createTenant(ctx.app);
    const body = await list(t.auth);
    expect(body.currency).toBe('USD');
    expect(body.builtin.source_date).toBe('2025-08-01');
    expect(body.builtin.prices).toContainEqual({ model: 'gpt-4o-mini', input_per_million: 0.15, output_per_million: 0.6 });
    expect(body.overrides).toEqual([]);
  });

  it('an override prices spans without a cost at once; deleting it restores the built-in price; other tenants never see it', async () => {
    const t = await createTenant(ctx.app);
    const other = await createTenant(ctx.app);
    // Warm the price cache of both tenants first: the override must invalidate it, not wait it out.
    expect(await storedCost(t, 'gpt-4o-mini-2024-07-18')).toBeCloseTo(0.15 + 0.6, 9);
    expect(await storedCost(other, 'gpt-4o-mini-2024-07-18')).toBeCloseTo(0.75, 9);

    const saved = await put(t.auth, 'OpenAI/GPT-4o-mini', { input_per_million: 1.1, output_per_million: 2.2 });
    expect(saved.statusCode, saved.body).toBe(200);
    expect(modelPriceOverride.parse(saved.json())).toMatchObject({ model: 'gpt-4o-mini', input_per_million: 1.1, output_per_million: 2.2 });
    const [stored] = await ctx.stores.sql<{ input_per_token: number; output_per_token: number }[]>`
      select input_per_token, output_per_token from model_prices where tenant_id = ${t.tenantId}`;
    expect(stored!.input_per_token).toBeCloseTo(1.1e-6, 15);
    expect(stored!.output_per_token).toBeCloseTo(2.2e-6, 15);

    expect(await storedCost(t, 'gpt-4o-mini-2024-07-18')).toBeCloseTo(1.1 + 2.2, 9);
    expect(await storedCost(other, 'gpt-4o-mini-2024-07-18')).toBeCloseTo(0.75, 9);
    expect((await list(t.auth)).overrides).toEqual([expect.objectContaining({ model: 'gpt-4o-mini', input_per_million: 1.1, output_per_million: 2.2 })]);
    expect((await list(other.auth)).overrides).toEqual([]);

    // Setting it again replaces it.
    expect((await put(t.auth, 'gpt-4o-mini', { input_per_million: 0, output_per_million: 10 })).statusCode).toBe(200);
    expect(await storedCost(t, 'gpt-4o-mini')).toBeCloseTo(10, 9);

    const removed = await del(t.auth, 'gpt-4o-mini');
    expect(removed.statusCode).toBe(204);
    expect(await storedCost(t, 'gpt-4o-mini-2024-07-18')).toBeCloseTo(0.75, 9);
    expect((await list(t.auth)).overrides).toEqual([]);
    expect((await del(t.auth, 'gpt-4o-mini')).statusCode).toBe(404);

    const actions = await ctx.stores.sql<{ action: string; resource_id: string }[]>`
      select action, resource_id from audit_log where tenant_id = ${t.tenantId} and action like 'model_price.%' order by seq`;
    expect(actions).toEqual([
      { action: 'model_price.set', resource_id: 'gpt-4o-mini' },
      { action: 'model_price.set', resource_id: 'gpt-4o-mini' },
      { action: 'model_price.delete', resource_id: 'gpt-4o-mini' },
    ]);
  });

  it('prices a model the built-in table does not know', async () => {
    const t = await createTenant(ctx.app);
    expect(await storedCost(t, 'acme-llm-7b')).toBe(0);
    expect((await put(t.auth, 'acme-llm-7b', { input_per_million: 0.5, output_per_million: 0.25 })).statusCode).toBe(200);
    expect(await storedCost(t, 'acme-llm-7b')).toBeCloseTo(0.75, 9);
  });

  it('lets every role read, only owners and members write, and no query-scoped key write', async () => {
    const t = await createTenant(ctx.app);
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    const member = bearer(await sessionToken(t.tenantId, 'member'));
    expect((await list(viewer)).overrides).toEqual([]);
    expect((await put(viewer, 'gpt-4o', { input_per_million: 1, output_per_million: 1 })).statusCode).toBe(403);
    expect((await put(member, 'gpt-4o', { input_per_million: 1, output_per_million: 1 })).statusCode).toBe(200);
    expect((await del(viewer, 'gpt-4o')).statusCode).toBe(403);
    const scoped = await queryKeyAuth(ctx.app, t.auth);
    expect((await list(scoped)).overrides).toHaveLength(1);
    const refused = await put(scoped, 'gpt-4o', { input_per_million: 2, output_per_million: 2 });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('scope_forbidden');
  });

  it('refuses bad prices and model names', async () => {
    const t = await createTenant(ctx.app);
    const cases: [string, unknown, number, string][] = [
      ['gpt-4o', { input_per_million: -1, output_per_million: 1 }, 400, 'body.input_per_million'],
      ['gpt-4o', { input_per_million: 1, output_per_million: '2' }, 400, 'body.output_per_million'],
      ['gpt-4o', { input_per_million: 1 }, 422, 'body.output_per_million'],
      ['gpt-4o', { input_per_million: 1, output_per_million: 1, extra: true }, 400, 'body'],
      ['gpt 4o', { input_per_million: 1, output_per_million: 1 }, 400, 'params.model'],
      ['a\u0000b', { input_per_million: 1, output_per_million: 1 }, 400, 'params.model'],
      ['openai/', { input_per_million: 1, output_per_million: 1 }, 400, 'params.model'],
    ];
    for (const [model, body, status, field] of cases) {
      const res = await put(t.auth, model, body);
      expect(res.statusCode, `${model} ${JSON.stringify(body)}`).toBe(status);
      expect(res.json().error).toContain(field);
    }
    expect((await list(t.auth)).overrides).toEqual([]);
  });
});

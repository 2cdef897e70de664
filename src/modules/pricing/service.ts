import { badRequest, notFound } from '../../platform/errors.js';
import type { PriceBook } from './price-book-service.js';
import { BUILTIN_PRICES, PRICE_TABLE_SOURCE_DATE, canonicalModelName } from './prices.js';
import type { ModelPriceRow, PricingRepository } from './repo.js';
import type { ModelPriceBody, ModelPriceList, ModelPriceOverride } from './schemas.js';

// The module's secondary services and helpers that other modules use: this file is its public face.
export { computeCost, findPrice, type PriceBook, type TokenPrice } from './price-book-service.js';

const PER_MILLION = 1_000_000;
// Per-token prices are stored as doubles; 12 significant digits undo the division's rounding noise.
const toPerMillion = (perToken: number): number => Number((perToken * PER_MILLION).toPrecision(12));

function toOverride(row: ModelPriceRow): ModelPriceOverride {
  return {
    model: row.model,
    input_per_million: toPerMillion(row.input_per_token),
    output_per_million: toPerMillion(row.output_per_token),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The built-in price table and per-tenant overrides; a change applies to this process's ingest at once. */
export class PricingService {
  constructor(
    private readonly repo: PricingRepository,
    private readonly prices: PriceBook,
  ) {}

  async list(tenantId: string): Promise<ModelPriceList> {
    return {
      currency: 'USD',
      builtin: {
        source_date: PRICE_TABLE_SOURCE_DATE,
        prices: [...BUILTIN_PRICES].map(([model, p]) => ({
          model,
          input_per_million: toPerMillion(p.inputPerToken),
          output_per_million: toPerMillion(p.outputPerToken),
        })),
      },
      overrides: (await this.repo.list(tenantId)).map(toOverride),
    };
  }

  async set(tenantId: string, model: string, body: ModelPriceBody): Promise<ModelPriceOverride> {
    const row = await this.repo.upsert(
      tenantId,
      this.key(model),
      body.input_per_million / PER_MILLION,
      body.output_per_million / PER_MILLION,
    );
    this.prices.forget(tenantId);
    return toOverride(row);
  }

  /** Removes the override and answers the model name it was stored under. */
  async remove(tenantId: string, model: string): Promise<string> {
    const key = this.key(model);
    const removed = await this.repo.remove(tenantId, key);
    this.prices.forget(tenantId);
    if (!removed) throw notFound('model price override');
    return key;
  }

  /** Overrides are keyed by the name ingest looks prices up with. */
  private key(model: string): string {
    const key = canonicalModelName(model);
    if (!key) throw badRequest('bad_request', 'params.model: names no model once its provider prefix is removed');
    return key;
  }
}

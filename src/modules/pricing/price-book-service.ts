import type { PricingRepository } from './repo.js';
import type { TokenPrice } from './prices.js';

// The lookups callers apply to a tenant's prices (ingest per span, eval judges, control actions).
export { computeCost, findPrice, type TokenPrice } from './prices.js';

const TTL_MS = 30_000;

/** Per-tenant price overrides, cached briefly: read on every ingest, changed rarely. */
export class PriceBook {
  private readonly cache = new Map<string, { prices: Map<string, TokenPrice>; expires: number }>();

  constructor(private readonly repo: Pick<PricingRepository, 'overrides'>) {}

  async forTenant(tenantId: string): Promise<ReadonlyMap<string, TokenPrice>> {
    const hit = this.cache.get(tenantId);
    if (hit && hit.expires > Date.now()) return hit.prices;
    const prices = await this.repo.overrides(tenantId);
    this.cache.set(tenantId, { prices, expires: Date.now() + TTL_MS });
    return prices;
  }

  forget(tenantId: string): void {
    this.cache.delete(tenantId);
  }
}

import type { Sql } from '../../stores/pg.js';
import type { TokenPrice } from './prices.js';

export function ingestRepository(sql: Sql) {
  return {
    async priceOverrides(tenantId: string): Promise<Map<string, TokenPrice>> {
      const rows = await sql<{ model: string; input_per_token: number; output_per_token: number }[]>`
        select model, input_per_token, output_per_token from model_prices where tenant_id = ${tenantId}`;
      return new Map(rows.map((r) => [r.model, { inputPerToken: r.input_per_token, outputPerToken: r.output_per_token }]));
    },
  };
}

export type IngestRepository = ReturnType<typeof ingestRepository>;

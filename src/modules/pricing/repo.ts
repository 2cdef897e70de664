import type { Sql } from '../../stores/pg.js';
import type { TokenPrice } from './prices.js';

export interface ModelPriceRow {
  model: string;
  input_per_token: number;
  output_per_token: number;
  updated_at: Date;
}

/** The tenant's model price overrides (Postgres `model_prices`, USD per token). */
export function pricingRepository(sql: Sql) {
  return {
    /** The tenant's overrides as ingest prices with them (read through PriceBook's cache). */
    async overrides(tenantId: string): Promise<Map<string, TokenPrice>> {
      const rows = await sql<{ model: string; input_per_token: number; output_per_token: number }[]>`
        select model, input_per_token, output_per_token from model_prices where tenant_id = ${tenantId}`;
      return new Map(rows.map((r) => [r.model, { inputPerToken: r.input_per_token, outputPerToken: r.output_per_token }]));
    },

    async list(tenantId: string): Promise<ModelPriceRow[]> {
      return sql<ModelPriceRow[]>`
        select model, input_per_token, output_per_token, updated_at from model_prices
        where tenant_id = ${tenantId} order by model`;
    },

    async upsert(tenantId: string, model: string, inputPerToken: number, outputPerToken: number): Promise<ModelPriceRow> {
      const [row] = await sql<ModelPriceRow[]>`
        insert into model_prices (tenant_id, model, input_per_token, output_per_token)
        values (${tenantId}, ${model}, ${inputPerToken}, ${outputPerToken})
        on conflict (tenant_id, model) do update
          set input_per_token = excluded.input_per_token, output_per_token = excluded.output_per_token, updated_at = now()
        returning model, input_per_token, output_per_token, updated_at`;
      return row!;
    },

    async remove(tenantId: string, model: string): Promise<boolean> {
      const rows = await sql`delete from model_prices where tenant_id = ${tenantId} and model = ${model} returning model`;
      return rows.length > 0;
    },
  };
}

export type PricingRepository = ReturnType<typeof pricingRepository>;

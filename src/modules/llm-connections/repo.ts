import type { Sql } from '../../stores/pg.js';

export type LlmProviderName = 'openai' | 'anthropic';

export interface LlmConnectionRow {
  id: string;
  tenant_id: string;
  provider: LlmProviderName;
  name: string;
  base_url: string | null;
  api_key_ciphertext: string;
  api_key_last4: string;
  default_model: string | null;
  created_at: Date;
  created_by: string | null;
}

export type NewLlmConnection = Omit<LlmConnectionRow, 'tenant_id' | 'created_at'>;

export function llmConnectionRepository(sql: Sql) {
  return {
    async insert(tenantId: string, c: NewLlmConnection): Promise<LlmConnectionRow> {
      const [row] = await sql<LlmConnectionRow[]>`
        insert into llm_connections (id, tenant_id, provider, name, base_url, api_key_ciphertext, api_key_last4, default_model, created_by)
        values (${c.id}, ${tenantId}, ${c.provider}, ${c.name}, ${c.base_url}, ${c.api_key_ciphertext}, ${c.api_key_last4},
                ${c.default_model}, ${c.created_by})
        returning *`;
      return row!;
    },

    async find(tenantId: string, id: string): Promise<LlmConnectionRow | undefined> {
      const [row] = await sql<LlmConnectionRow[]>`select * from llm_connections where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    async sealedKeys(tenantId: string): Promise<string[]> {
      const rows = await sql<{ api_key_ciphertext: string }[]>`
        select api_key_ciphertext from llm_connections where tenant_id = ${tenantId}`;
      return rows.map((r) => r.api_key_ciphertext);
    },

    async list(tenantId: string, afterId: string | null, limit: number): Promise<LlmConnectionRow[]> {
      return sql<LlmConnectionRow[]>`
        select * from llm_connections
        where tenant_id = ${tenantId} ${afterId ? sql`and id > ${afterId}` : sql``}
        order by id
        limit ${limit}`;
    },

    /** Ids are UUIDv7, so the highest is the newest. */
    async newest(tenantId: string, provider: LlmProviderName): Promise<LlmConnectionRow | undefined> {
      const [row] = await sql<LlmConnectionRow[]>`
        select * from llm_connections where tenant_id = ${tenantId} and provider = ${provider} order by id desc limit 1`;
      return row;
    },

    async delete(tenantId: string, id: string): Promise<boolean> {
      const rows = await sql`delete from llm_connections where tenant_id = ${tenantId} and id = ${id} returning id`;
      return rows.length > 0;
    },
  };
}

export type LlmConnectionRepository = ReturnType<typeof llmConnectionRepository>;

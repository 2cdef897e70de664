import type { Sql, TxSql } from '../../stores/pg.js';

export interface ApiKeyRow {
  id: string;
  tenant_id: string;
  project_id: string;
  name: string;
  prefix: string;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  created_by_user_id: string | null;
  created_by_email: string | null;
  created_by_first_name: string | null;
  created_by_last_name: string | null;
}

export interface NewApiKey {
  id: string;
  tenantId: string;
  projectId: string;
  name: string;
  prefix: string;
  keyHash: Buffer;
  scopes: string[];
  createdByUserId: string | null;
}

export function apiKeyRepository(sql: Sql) {
  const selectWithCreator = (db: Sql | TxSql) => db`
    select k.id, k.tenant_id, k.project_id, k.name, k.prefix, k.scopes, k.created_at, k.last_used_at, k.revoked_at,
           k.created_by_user_id, u.email as created_by_email, u.given_name as created_by_first_name,
           u.family_name as created_by_last_name
    from api_keys k left join users u on u.id = k.created_by_user_id`;

  return {
    async insert(key: NewApiKey, db: Sql | TxSql = sql): Promise<Date> {
      const [row] = await db<{ created_at: Date }[]>`
        insert into api_keys (id, tenant_id, project_id, name, prefix, key_hash, scopes, created_by_user_id)
        values (${key.id}, ${key.tenantId}, ${key.projectId}, ${key.name}, ${key.prefix}, ${key.keyHash},
                ${key.scopes}, ${key.createdByUserId})
        returning created_at`;
      return row!.created_at;
    },

    async list(tenantId: string): Promise<ApiKeyRow[]> {
      return sql<ApiKeyRow[]>`${selectWithCreator(sql)} where k.tenant_id = ${tenantId} order by k.id`;
    },

    async find(tenantId: string, id: string): Promise<ApiKeyRow | undefined> {
      const [row] = await sql<ApiKeyRow[]>`${selectWithCreator(sql)} where k.tenant_id = ${tenantId} and k.id = ${id}`;
      return row;
    },

    /** Sets revoked_at once; revoking again keeps the first time. */
    async revoke(tenantId: string, id: string): Promise<boolean> {
      const rows = await sql`
        update api_keys set revoked_at = coalesce(revoked_at, now())
        where tenant_id = ${tenantId} and id = ${id} returning id`;
      return rows.length > 0;
    },
  };
}

export type ApiKeyRepository = ReturnType<typeof apiKeyRepository>;

import type { Role } from '../../platform/auth.js';
import type { Sql } from '../../stores/pg.js';

export interface UserRow {
  id: string;
  tenant_id: string;
  email: string | null;
  given_name: string | null;
  family_name: string | null;
  role: Role;
}

/** Dashboard users as upserted by the authenticator from session claims. */
export function userRepository(sql: Sql) {
  return {
    async count(tenantId: string): Promise<number> {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from users where tenant_id = ${tenantId}`;
      return row!.n;
    },

    async find(tenantId: string, id: string): Promise<UserRow | undefined> {
      const [row] = await sql<UserRow[]>`
        select id, tenant_id, email, given_name, family_name, role from users
        where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },
  };
}

export type UserRepository = ReturnType<typeof userRepository>;

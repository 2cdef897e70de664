import type { Role } from '../../platform/auth.js';
import { observeStoreCall } from '../../platform/metrics.js';
import type { PlanName } from '../../platform/plans.js';
import type { Sql, TxSql } from '../../stores/pg.js';

export type MemberStatus = 'active' | 'invited' | 'removed';

export interface MemberRow {
  id: string;
  tenant_id: string;
  idp_subject: string | null;
  email: string | null;
  given_name: string | null;
  family_name: string | null;
  role: Role;
  status: MemberStatus;
  invited_by: string | null;
  created_at: Date;
  last_seen_at: Date | null;
  removed_at: Date | null;
}

/** What a session token says about the person signing in (their IdP subject and profile). */
export interface SignInProfile {
  sub: string;
  email: string | null;
  given_name: string | null;
  family_name: string | null;
}

/** A tenant and the row of one IdP subject in it, if any (the sign-in fast path). */
export interface SeenSubject {
  plan: PlanName;
  id: string | null;
  role: Role | null;
  status: MemberStatus | null;
}

/** Queries that run inside a tenant-locked transaction, or outside one where no lock is needed. */
function memberQueries(db: Sql | TxSql) {
  return {
    async find(tenantId: string, id: string): Promise<MemberRow | undefined> {
      const [row] = await db<MemberRow[]>`select * from users where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    async findBySubject(tenantId: string, sub: string): Promise<MemberRow | undefined> {
      const [row] = await db<MemberRow[]>`select * from users where tenant_id = ${tenantId} and idp_subject = ${sub}`;
      return row;
    },

    /** Rows of an email, whatever its case, in the given states, newest first. */
    async findByEmail(tenantId: string, email: string, states: MemberStatus[]): Promise<MemberRow[]> {
      return db<MemberRow[]>`
        select * from users
        where tenant_id = ${tenantId} and lower(email) = lower(${email}) and status = any(${states})
        order by removed_at desc nulls last, id desc`;
    },

    /** Active and invited members: the seats the plan counts. */
    async countSeats(tenantId: string): Promise<number> {
      const [row] = await db<{ n: number }[]>`
        select count(*)::int as n from users where tenant_id = ${tenantId} and status <> 'removed'`;
      return row!.n;
    },

    /** Locks the tenant's active owners until the transaction ends; answers their ids. */
    async lockActiveOwners(tenantId: string): Promise<string[]> {
      const rows = await db<{ id: string }[]>`
        select id from users where tenant_id = ${tenantId} and status = 'active' and role = 'owner'
        order by id for update`;
      return rows.map((r) => r.id);
    },

    async insert(row: Pick<MemberRow, 'id' | 'tenant_id' | 'idp_subject' | 'email' | 'given_name' | 'family_name' | 'role' | 'status' | 'invited_by' | 'last_seen_at'>): Promise<MemberRow> {
      const [created] = await db<MemberRow[]>`insert into users ${db(row)} returning *`;
      return created!;
    },

    /** First sign-in on a row (an invitation, or a revived removed member): it becomes active with its stored role. */
    async activate(tenantId: string, id: string, profile: SignInProfile): Promise<MemberRow> {
      const [row] = await db<MemberRow[]>`
        update users set idp_subject = ${profile.sub}, status = 'active', removed_at = null,
          email = coalesce(${profile.email}, email), given_name = ${profile.given_name}, family_name = ${profile.family_name},
          last_seen_at = now()
        where tenant_id = ${tenantId} and id = ${id}
        returning *`;
      return row!;
    },

    /** A removed member invited again: the same row (its IdP subject kept), pending once more. */
    async revive(tenantId: string, id: string, email: string, role: Role, invitedBy: string | null): Promise<MemberRow> {
      const [row] = await db<MemberRow[]>`
        update users set status = 'invited', removed_at = null, email = ${email}, role = ${role}, invited_by = ${invitedBy}
        where tenant_id = ${tenantId} and id = ${id}
        returning *`;
      return row!;
    },

    async setRole(tenantId: string, id: string, role: Role): Promise<MemberRow> {
      const [row] = await db<MemberRow[]>`update users set role = ${role} where tenant_id = ${tenantId} and id = ${id} returning *`;
      return row!;
    },

    async markRemoved(tenantId: string, id: string): Promise<void> {
      await db`update users set status = 'removed', removed_at = now() where tenant_id = ${tenantId} and id = ${id}`;
    },
  };
}

export type MemberQueries = ReturnType<typeof memberQueries>;

/** The tenant's membership: the `users` table (one row per person and tenant, removed ones kept). */
export function memberRepository(sql: Sql) {
  return {
    ...memberQueries(sql),

    /**
     * The sign-in fast path, one round trip: the tenant's plan and the subject's row; an active
     * member's profile (never their role) is refreshed from the token on the way. No row at all:
     * the tenant does not exist.
     */
    async touchSubject(tenantId: string, profile: SignInProfile): Promise<SeenSubject | undefined> {
      const [row] = await observeStoreCall(
        'postgres',
        'auth.session_user',
        () => sql<SeenSubject[]>`
          with seen as (
            select t.plan, u.id, u.role, u.status
            from tenants t left join users u on u.tenant_id = t.id and u.idp_subject = ${profile.sub}
            where t.id = ${tenantId}
          ), touched as (
            update users set email = coalesce(${profile.email}, email), given_name = ${profile.given_name},
              family_name = ${profile.family_name}, last_seen_at = now()
            where id = (select id from seen where status = 'active')
          )
          select plan, id, role, status from seen`,
      );
      return row;
    },

    /** Members (active and invited) in id order, i.e. oldest first; `limit + 1` rows for toPage. */
    async list(tenantId: string, afterId: string | null, limit: number): Promise<MemberRow[]> {
      return sql<MemberRow[]>`
        select * from users where tenant_id = ${tenantId} and status <> 'removed'
          ${afterId ? sql`and id > ${afterId}` : sql``}
        order by id limit ${limit + 1}`;
    },

    /**
     * Runs `work` in a transaction holding the tenant row's lock, which serialises every change of
     * the tenant's membership (seat count, owner count); `undefined` when there is no such tenant.
     */
    async withTenantLock<T>(tenantId: string, work: (q: MemberQueries, plan: PlanName) => Promise<T>): Promise<T | undefined> {
      return sql.begin(async (tx) => {
        // NO KEY UPDATE serialises membership changes of a tenant without conflicting with the KEY
        // SHARE locks that every insert referencing the tenant takes (ingest, webhook events, ...).
        const [tenant] = await tx<{ plan: PlanName }[]>`select plan from tenants where id = ${tenantId} for no key update`;
        if (!tenant) return undefined;
        return work(memberQueries(tx), tenant.plan);
      }) as Promise<T | undefined>;
    },
  };
}

export type MemberRepository = ReturnType<typeof memberRepository>;

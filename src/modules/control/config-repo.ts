import type { Sql } from '../../stores/pg.js';
import type { ModelRef, PolicyStep, PolicyTrigger } from './schemas.js';

export interface RouteSettings {
  name: string;
  project_id: string | null;
  model: ModelRef;
  fallbacks: ModelRef[];
}
export interface RouteRow extends RouteSettings {
  id: string;
  tenant_id: string;
  created_at: Date;
  updated_at: Date;
}

export interface PolicySettings {
  name: string;
  project_id: string;
  enabled: boolean;
  trigger: PolicyTrigger;
  steps: PolicyStep[];
  max_retry_depth: number;
  max_cascade_depth: number;
  require_approval: boolean;
}
export interface PolicyRow extends PolicySettings {
  id: string;
  tenant_id: string;
  active_since: Date;
  created_at: Date;
  updated_at: Date;
}

type Table = 'model_routes' | 'policies';

/** Model routes and policies: small per-tenant tables of settings, listed by id. */
export function controlConfigRepository(sql: Sql) {
  const json = (v: unknown) => sql.json(v as never);
  const find = async <R extends object>(table: Table, tenantId: string, id: string) =>
    (await sql<R[]>`select * from ${sql(table)} where tenant_id = ${tenantId} and id = ${id}`)[0];
  const list = <R extends object>(table: Table, tenantId: string, after: string | null, limit: number) =>
    sql<R[]>`select * from ${sql(table)} where tenant_id = ${tenantId} ${after ? sql`and id > ${after}` : sql``} order by id limit ${limit + 1}`;
  const remove = async (table: Table, tenantId: string, id: string) =>
    (await sql`delete from ${sql(table)} where tenant_id = ${tenantId} and id = ${id}`).count > 0;

  return {
    async insertRoute(tenantId: string, id: string, s: RouteSettings): Promise<RouteRow> {
      const [row] = await sql<RouteRow[]>`
        insert into model_routes (id, tenant_id, project_id, name, model, fallbacks)
        values (${id}, ${tenantId}, ${s.project_id}, ${s.name}, ${json(s.model)}, ${json(s.fallbacks)}) returning *`;
      return row!;
    },
    async updateRoute(tenantId: string, id: string, s: RouteSettings): Promise<RouteRow | undefined> {
      const [row] = await sql<RouteRow[]>`
        update model_routes set project_id = ${s.project_id}, name = ${s.name}, model = ${json(s.model)}, fallbacks = ${json(s.fallbacks)}, updated_at = now()
        where tenant_id = ${tenantId} and id = ${id} returning *`;
      return row;
    },
    findRoute: (tenantId: string, id: string) => find<RouteRow>('model_routes', tenantId, id),
    listRoutes: (tenantId: string, after: string | null, limit: number) => list<RouteRow>('model_routes', tenantId, after, limit),
    removeRoute: (tenantId: string, id: string) => remove('model_routes', tenantId, id),

    async insertPolicy(tenantId: string, id: string, s: PolicySettings): Promise<PolicyRow> {
      const [row] = await sql<PolicyRow[]>`
        insert into policies (id, tenant_id, project_id, name, enabled, trigger, steps, max_retry_depth, max_cascade_depth, require_approval)
        values (${id}, ${tenantId}, ${s.project_id}, ${s.name}, ${s.enabled}, ${json(s.trigger)}, ${json(s.steps)},
                ${s.max_retry_depth}, ${s.max_cascade_depth}, ${s.require_approval}) returning *`;
      return row!;
    },
    /** A policy enabled again starts afresh: it does not reach back to what happened while it was off. */
    async updatePolicy(tenantId: string, id: string, s: PolicySettings): Promise<PolicyRow | undefined> {
      const [row] = await sql<PolicyRow[]>`
        update policies set project_id = ${s.project_id}, name = ${s.name}, trigger = ${json(s.trigger)}, steps = ${json(s.steps)},
          max_retry_depth = ${s.max_retry_depth}, max_cascade_depth = ${s.max_cascade_depth}, require_approval = ${s.require_approval},
          active_since = case when ${s.enabled} and not enabled then now() else active_since end,
          enabled = ${s.enabled}, updated_at = now()
        where tenant_id = ${tenantId} and id = ${id} returning *`;
      return row;
    },
    findPolicy: (tenantId: string, id: string) => find<PolicyRow>('policies', tenantId, id),
    listPolicies: (tenantId: string, after: string | null, limit: number) => list<PolicyRow>('policies', tenantId, after, limit),
    removePolicy: (tenantId: string, id: string) => remove('policies', tenantId, id),

    async enabledPoliciesOf(tenantId: string): Promise<PolicyRow[]> {
      return sql<PolicyRow[]>`select * from policies where tenant_id = ${tenantId} and enabled order by id`;
    },
  };
}

export type ControlConfigRepository = ReturnType<typeof controlConfigRepository>;

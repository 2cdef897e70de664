import type { Sql, TxSql } from '../../stores/pg.js';
import type { DeploymentStatus } from './deployments.js';
import type { AbReport, ListDeploymentsQuery } from './schemas.js';

export interface DeploymentRow {
  id: string;
  tenant_id: string;
  project_id: string;
  prompt_id: string;
  prompt_name: string;
  cluster_signature: string;
  status: DeploymentStatus;
  requested_by: string;
  current_prompt: string;
  proposed_prompt: string;
  rationale: string;
  from_version_id: string;
  from_version: number;
  to_version_id: string | null;
  to_version: number | null;
  ab_report: AbReport | null;
  regression_metric: number | null;
  monitor_baseline: number | null;
  monitor_samples: number;
  approved_by: string | null;
  rejection_reason: string | null;
  lease_until: Date | null;
  shipped_at: Date | null;
  rolled_back_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** Columns a transition may set besides the status. */
export type DeploymentPatch = Partial<
  Pick<DeploymentRow, 'ab_report' | 'regression_metric' | 'monitor_baseline' | 'monitor_samples' | 'approved_by' | 'rejection_reason' | 'lease_until' | 'shipped_at' | 'rolled_back_at' | 'to_version_id' | 'from_version_id'>
>;

export type NewDeployment = Pick<DeploymentRow, 'id' | 'project_id' | 'prompt_id' | 'cluster_signature' | 'requested_by' | 'current_prompt' | 'from_version_id'>;

export function deploymentRepository(sql: Sql) {
  // Rows carry the prompt's name and version numbers: what a reader wants instead of three ids.
  const select = (db: Sql | TxSql) => db`
    select d.*, p.name as prompt_name, fv.version as from_version, tv.version as to_version
    from prompt_deployments d
    join prompts p on p.id = d.prompt_id
    join prompt_versions fv on fv.id = d.from_version_id
    left join prompt_versions tv on tv.id = d.to_version_id`;

  // One object for the whole SET list: postgres.js builds `col = value` pairs only after `update … set`.
  const columnsOf = (db: TxSql, to: DeploymentStatus, patch: DeploymentPatch) => {
    const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    return db({ ...defined, ...(patch.ab_report ? { ab_report: db.json(patch.ab_report as never) } : {}), status: to, updated_at: new Date() } as never);
  };

  return {
    begin<T>(work: (tx: TxSql) => Promise<T>): Promise<T> {
      return sql.begin(work) as Promise<T>;
    },

    /** The new deployment in `proposed`; undefined when the prompt already has an open one. */
    async insert(tx: TxSql, tenantId: string, d: NewDeployment): Promise<DeploymentRow | undefined> {
      const [created] = await tx<{ id: string }[]>`
        insert into prompt_deployments ${tx({ ...d, tenant_id: tenantId, status: 'proposed' })} on conflict do nothing returning id`;
      return created ? this.find(tenantId, created.id, tx) : undefined;
    },

    async find(tenantId: string, id: string, db: Sql | TxSql = sql): Promise<DeploymentRow | undefined> {
      const [row] = await db<DeploymentRow[]>`${select(db)} where d.tenant_id = ${tenantId} and d.id = ${id}`;
      return row;
    },

    async list(tenantId: string, q: ListDeploymentsQuery, after: { createdAt: Date; id: string } | null): Promise<DeploymentRow[]> {
      return sql<DeploymentRow[]>`${select(sql)}
        where d.tenant_id = ${tenantId}
          ${q.status ? sql`and d.status = ${q.status}` : sql``}
          ${q.project_id ? sql`and d.project_id = ${q.project_id}` : sql``}
          ${after ? sql`and (d.created_at, d.id) < (${after.createdAt}, ${after.id})` : sql``}
        order by d.created_at desc, d.id desc limit ${q.limit + 1}`;
    },

    /** The one way a status changes: only from one of `from`, so a lost race changes nothing (undefined). */
    async move(tx: TxSql, tenantId: string, id: string, from: readonly DeploymentStatus[], to: DeploymentStatus, patch: DeploymentPatch): Promise<DeploymentRow | undefined> {
      const [moved] = await tx<{ id: string }[]>`
        update prompt_deployments set ${columnsOf(tx, to, patch)}
        where tenant_id = ${tenantId} and id = ${id} and status = any(${from as string[]}) returning id`;
      return moved ? this.find(tenantId, id, tx) : undefined;
    },

    /** Writes the provider's proposal once, while the deployment is still proposed. */
    async writeProposal(tenantId: string, id: string, proposal: { proposed_prompt: string; rationale: string }): Promise<void> {
      await sql`update prompt_deployments set proposed_prompt = ${proposal.proposed_prompt}, rationale = ${proposal.rationale}, updated_at = date_trunc('milliseconds', now())
                where tenant_id = ${tenantId} and id = ${id} and status = 'proposed' and proposed_prompt = ''`;
    },

    /** Takes over an A/B run whose worker died (its lease passed); false when someone holds it or it moved on. */
    async renewLease(tenantId: string, id: string, until: Date): Promise<boolean> {
      const rows = await sql`update prompt_deployments set lease_until = ${until}
                             where tenant_id = ${tenantId} and id = ${id} and status = 'ab_running' and (lease_until is null or lease_until < now()) returning id`;
      return rows.length > 0;
    },

    async releaseLease(tenantId: string, id: string): Promise<void> {
      await sql`update prompt_deployments set lease_until = now() where tenant_id = ${tenantId} and id = ${id} and status = 'ab_running'`;
    },

    async setMonitoring(tenantId: string, id: string, metric: number | null, samples: number): Promise<void> {
      await sql`update prompt_deployments set regression_metric = ${metric}, monitor_samples = ${samples}
                where tenant_id = ${tenantId} and id = ${id} and status = 'monitoring'`;
    },

    /** Deployments in `status` across tenants, oldest change first, for the lifecycle pass. */
    async inStatus(status: DeploymentStatus, limit: number, updatedBefore = new Date()): Promise<DeploymentRow[]> {
      return sql<DeploymentRow[]>`${select(sql)} where d.status = ${status} and d.updated_at <= ${updatedBefore} order by d.updated_at limit ${limit}`;
    },

    /** A/B runs whose lease passed, not queued again since `queuedBefore`. */
    async expiredLeases(limit: number, queuedBefore: Date): Promise<DeploymentRow[]> {
      return sql<DeploymentRow[]>`${select(sql)}
        where d.status = 'ab_running' and d.lease_until < now() and d.updated_at <= ${queuedBefore} order by d.updated_at limit ${limit}`;
    },

    /** Marks a lost job as queued again, so the next passes leave it to that job for a while. */
    async touch(tenantId: string, id: string): Promise<void> {
      await sql`update prompt_deployments set updated_at = date_trunc('milliseconds', now()) where tenant_id = ${tenantId} and id = ${id}`;
    },

    /** Whether the cluster had a deployment open, or one created since `since` (the proposal cool-down). */
    async clusterBusy(tenantId: string, projectId: string, signature: string, since: Date): Promise<boolean> {
      const [row] = await sql<{ busy: boolean }[]>`
        select exists (select 1 from prompt_deployments where tenant_id = ${tenantId} and project_id = ${projectId}
          and cluster_signature = ${signature} and (created_at >= ${since} or status in ('proposed', 'ab_running', 'ab_passed', 'shipped', 'monitoring', 'regressed'))) as busy`;
      return row!.busy;
    },

    async seenTraces(deploymentId: string, traceIds: readonly string[]): Promise<Map<string, boolean>> {
      const rows = await sql<{ trace_id: string; runs_version: boolean }[]>`
        select trace_id, runs_version from prompt_deployment_traces where deployment_id = ${deploymentId} and trace_id = any(${traceIds as string[]}::uuid[])`;
      return new Map(rows.map((r) => [r.trace_id, r.runs_version]));
    },

    async rememberTraces(deploymentId: string, seen: readonly { trace_id: string; runs_version: boolean }[]): Promise<void> {
      if (seen.length === 0) return;
      await sql`insert into prompt_deployment_traces ${sql(seen.map((s) => ({ ...s, deployment_id: deploymentId })))} on conflict do nothing`;
    },

    /** Data-subject erasure: the monitor's memory of these traces, in every deployment of the tenant. */
    async forgetTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
      const rows = await sql`
        delete from prompt_deployment_traces t using prompt_deployments d
        where d.id = t.deployment_id and d.tenant_id = ${tenantId} and t.trace_id = any(${traceIds as string[]}::uuid[])
        returning t.trace_id`;
      return rows.length;
    },
  };
}

export type DeploymentRepository = ReturnType<typeof deploymentRepository>;

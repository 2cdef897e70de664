import type { Sql, TxSql } from '../../stores/pg.js';

export interface PromptRow {
  id: string;
  tenant_id: string;
  project_id: string;
  name: string;
  active_version_id: string;
  created_at: Date;
  updated_at: Date;
}

export interface VersionRow {
  id: string;
  tenant_id: string;
  prompt_id: string;
  version: number;
  content: string;
  created_by: string;
  created_at: Date;
}

/** A prompt with its active version, as the registry answers it. */
export type ActiveRow = PromptRow & { active: VersionRow };

const MAX_VERSIONS_SHOWN = 100;

export function promptRepository(sql: Sql) {
  async function withActive(db: Sql | TxSql, rows: PromptRow[]): Promise<ActiveRow[]> {
    if (rows.length === 0) return [];
    const versions = await db<VersionRow[]>`select * from prompt_versions where id = any(${rows.map((r) => r.active_version_id)}::uuid[])`;
    const byId = new Map(versions.map((v) => [v.id, v]));
    return rows.map((r) => ({ ...r, active: byId.get(r.active_version_id)! }));
  }

  return {
    begin<T>(work: (tx: TxSql) => Promise<T>): Promise<T> {
      return sql.begin(work) as Promise<T>;
    },

    /** The prompt and its version 1, active; undefined when the project already has that name. */
    async create(tenantId: string, p: { id: string; project_id: string; name: string }, v: { id: string; content: string; created_by: string }) {
      return sql.begin(async (tx) => {
        const [row] = await tx<PromptRow[]>`
          insert into prompts (id, tenant_id, project_id, name, active_version_id)
          values (${p.id}, ${tenantId}, ${p.project_id}, ${p.name}, ${v.id})
          on conflict (tenant_id, project_id, name) do nothing returning *`;
        if (!row) return undefined;
        await tx`insert into prompt_versions ${tx({ ...v, tenant_id: tenantId, prompt_id: p.id, version: 1 })}`;
        await tx`insert into prompt_activations ${tx({ id: v.id, tenant_id: tenantId, prompt_id: p.id, version_id: v.id, previous_version_id: null, activated_by: v.created_by })}`;
        return (await withActive(tx, [row]))[0]!;
      }) as Promise<ActiveRow | undefined>;
    },

    async find(tenantId: string, projectId: string, name: string, db: Sql | TxSql = sql): Promise<ActiveRow | undefined> {
      const rows = await db<PromptRow[]>`select * from prompts where tenant_id = ${tenantId} and project_id = ${projectId} and name = ${name}`;
      return (await withActive(db, rows))[0];
    },

    async findById(tenantId: string, id: string): Promise<ActiveRow | undefined> {
      return (await withActive(sql, await sql<PromptRow[]>`select * from prompts where tenant_id = ${tenantId} and id = ${id}`))[0];
    },

    async ofProject(tenantId: string, projectId: string): Promise<PromptRow[]> {
      return sql<PromptRow[]>`select * from prompts where tenant_id = ${tenantId} and project_id = ${projectId} order by id limit 1000`;
    },

    async list(tenantId: string, projectId: string | undefined, afterId: string | null, limit: number): Promise<ActiveRow[]> {
      const rows = await sql<PromptRow[]>`
        select * from prompts where tenant_id = ${tenantId}
          ${projectId ? sql`and project_id = ${projectId}` : sql``}
          ${afterId ? sql`and id > ${afterId}` : sql``}
        order by id limit ${limit + 1}`;
      return withActive(sql, rows);
    },

    async versions(promptId: string): Promise<VersionRow[]> {
      return sql<VersionRow[]>`select * from prompt_versions where prompt_id = ${promptId} order by version desc limit ${MAX_VERSIONS_SHOWN}`;
    },

    /** The next version of a prompt; the prompt row is locked so concurrent additions number in turn. */
    async addVersion(tx: TxSql, tenantId: string, promptId: string, v: { id: string; content: string; created_by: string }): Promise<VersionRow> {
      // Lock first, then read the highest version in a second statement: its snapshot is taken after
      // the lock is granted, so it sees the version a concurrent writer just committed (a subquery
      // of the locking statement would not, and two requests would take the same number).
      await tx`select 1 from prompts where id = ${promptId} for update`;
      const [locked] = await tx<{ n: number }[]>`
        select coalesce(max(version), 0)::int as n from prompt_versions where prompt_id = ${promptId}`;
      const [row] = await tx<VersionRow[]>`
        insert into prompt_versions ${tx({ ...v, tenant_id: tenantId, prompt_id: promptId, version: locked!.n + 1 })} returning *`;
      return row!;
    },

    /**
     * Points the prompt at `versionId`, only while `expected` is still active (null: whatever is);
     * answers the version it replaced, or null when it changed nothing.
     */
    async activate(tx: TxSql, tenantId: string, promptId: string, versionId: string, expected: string | null, by: string, id: string): Promise<string | null> {
      const [prev] = await tx<{ active_version_id: string }[]>`
        select active_version_id from prompts where tenant_id = ${tenantId} and id = ${promptId} for update`;
      if (!prev || (expected !== null && prev.active_version_id !== expected)) return null;
      await tx`update prompts set active_version_id = ${versionId}, updated_at = date_trunc('milliseconds', now()) where id = ${promptId}`;
      await tx`insert into prompt_activations ${tx({ id, tenant_id: tenantId, prompt_id: promptId, version_id: versionId, previous_version_id: prev.active_version_id, activated_by: by })}`;
      return prev.active_version_id;
    },

    /** (tenant, project) pairs that have prompts: the only projects an automatic proposal can improve. */
    async projectsWithPrompts(): Promise<{ tenant_id: string; project_id: string }[]> {
      return sql<{ tenant_id: string; project_id: string }[]>`select distinct tenant_id, project_id from prompts`;
    },
  };
}

export type PromptRepository = ReturnType<typeof promptRepository>;

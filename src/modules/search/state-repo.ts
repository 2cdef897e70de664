import type { Sql } from '../../stores/pg.js';

export interface SearchSettingsRow {
  tenant_id: string;
  project_id: string;
  embed_spans: boolean;
  embedded_until: Date | null;
  last_error: string | null;
}

export interface IndexStateRow {
  tenant_id: string;
  project_id: string;
  dim: number;
  /** Null while the project's vectors are not in an HNSW table. */
  loaded_until: Date | null;
}

/** Postgres state of semantic search: dimensions, embedding opt-ins and cursors, HNSW load watermarks. */
export function searchStateRepository(sql: Sql) {
  const dimOf = async (tenantId: string, projectId: string): Promise<number | null> => {
    const [row] = await sql<{ dim: number }[]>`
      select dim from project_vector_dims where tenant_id = ${tenantId} and project_id = ${projectId}`;
    return row?.dim ?? null;
  };

  return {
    dim: dimOf,

    /** Fixes the dimension unless one is fixed already; returns the project's dimension either way. */
    async claimDim(tenantId: string, projectId: string, dim: number): Promise<number> {
      const [claimed] = await sql<{ dim: number }[]>`
        insert into project_vector_dims (project_id, tenant_id, dim) values (${projectId}, ${tenantId}, ${dim})
        on conflict (project_id) do nothing returning dim`;
      if (claimed) return claimed.dim;
      // A separate statement: it sees the row of a concurrent claim that won.
      const fixed = await dimOf(tenantId, projectId);
      if (fixed === null) throw new Error(`project ${projectId} has a vector dimension under another tenant`);
      return fixed;
    },

    async settings(tenantId: string, projectId: string): Promise<SearchSettingsRow | null> {
      const [row] = await sql<SearchSettingsRow[]>`
        select tenant_id, project_id, embed_spans, embedded_until, last_error
        from project_search_settings where tenant_id = ${tenantId} and project_id = ${projectId}`;
      return row ?? null;
    },

    /** Turning embedding on starts the embedder's cursor there: spans stored while it was off are not embedded (nor billed). */
    async putSettings(tenantId: string, projectId: string, embedSpans: boolean): Promise<void> {
      await sql`
        insert into project_search_settings (project_id, tenant_id, embed_spans, embedded_until)
        values (${projectId}, ${tenantId}, ${embedSpans}, case when ${embedSpans}::boolean then now() end)
        on conflict (project_id) do update
        set embed_spans = excluded.embed_spans,
            embedded_until = case when project_search_settings.embed_spans then project_search_settings.embedded_until else excluded.embedded_until end,
            last_error = null,
            updated_at = now()`;
    },

    /** Projects that opted in to server-side embedding. */
    async embeddingTargets(): Promise<SearchSettingsRow[]> {
      return sql<SearchSettingsRow[]>`
        select tenant_id, project_id, embed_spans, embedded_until, last_error
        from project_search_settings where embed_spans order by project_id`;
    },

    /** Moves the embedder's cursor (when `until` is given) and records why it stopped, or that it did not. */
    async recordEmbedding(projectId: string, until: Date | null, error: string | null): Promise<void> {
      await sql`
        update project_search_settings
        set embedded_until = coalesce(${until}, embedded_until), last_error = ${error}, updated_at = now()
        where project_id = ${projectId}`;
    },

    async indexState(tenantId: string, projectId: string): Promise<IndexStateRow | null> {
      const [row] = await sql<IndexStateRow[]>`
        select tenant_id, project_id, dim, loaded_until from span_vector_index
        where tenant_id = ${tenantId} and project_id = ${projectId}`;
      return row ?? null;
    },

    /** Every project with vectors, with its HNSW watermark when it has one. */
    async indexCandidates(): Promise<IndexStateRow[]> {
      return sql<IndexStateRow[]>`
        select d.tenant_id, d.project_id, d.dim, i.loaded_until
        from project_vector_dims d left join span_vector_index i on i.project_id = d.project_id and i.dim = d.dim
        order by d.project_id`;
    },

    async saveIndexState(tenantId: string, projectId: string, dim: number, loadedUntil: Date, added: number): Promise<void> {
      await sql`
        insert into span_vector_index (project_id, tenant_id, dim, loaded_until, vectors)
        values (${projectId}, ${tenantId}, ${dim}, ${loadedUntil}, ${added})
        on conflict (project_id) do update
        set loaded_until = excluded.loaded_until, vectors = span_vector_index.vectors + excluded.vectors, updated_at = now()`;
    },
  };
}

export type SearchStateRepository = ReturnType<typeof searchStateRepository>;

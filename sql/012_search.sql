-- Semantic span search (src/modules/search). Rows are keyed by project (ids are global); every
-- query also names the tenant.

-- A project's vector dimension, fixed by its first vector (native ingest or the embedder job).
create table if not exists project_vector_dims (
  project_id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  dim integer not null check (dim between 1 and 4096),
  created_at timestamptz not null default now()
);

-- Projects whose spans the embedder job embeds (opt-in: each span is a billed provider call), with
-- its cursor over spans.created_at and the last reason it could not embed.
create table if not exists project_search_settings (
  project_id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  embed_spans boolean not null,
  embedded_until timestamptz,
  last_error text,
  updated_at timestamptz not null default now()
);
create index if not exists project_search_settings_embedding on project_search_settings (project_id) where embed_spans;

-- Projects whose vectors are copied into span_vectors_hnsw_<dim>, up to loaded_until (a
-- span_vectors.inserted_at watermark); searches read newer vectors exactly from span_vectors.
create table if not exists span_vector_index (
  project_id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  dim integer not null,
  loaded_until timestamptz not null,
  vectors bigint not null,
  updated_at timestamptz not null default now()
);

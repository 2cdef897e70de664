-- Trace registry: uniqueness of trace ids per tenant (409 on native re-ingest) and the location
-- (project, start time) that lets a trace read hit ClickHouse's primary key.
create table if not exists trace_registry (
  tenant_id uuid not null,
  trace_id uuid not null,
  project_id uuid not null,
  started_at timestamptz not null,
  source text not null check (source in ('native', 'otlp')),
  created_at timestamptz not null default now(),
  primary key (tenant_id, trace_id)
);

-- Monthly trace counts per tenant for plan quotas (UTC calendar months).
create table if not exists trace_usage (
  tenant_id uuid not null references tenants (id) on delete cascade,
  month date not null,
  traces bigint not null default 0,
  primary key (tenant_id, month)
);

-- Per-tenant overrides of the built-in model price table (USD per token).
create table if not exists model_prices (
  tenant_id uuid not null references tenants (id) on delete cascade,
  model text not null,
  input_per_token double precision not null check (input_per_token >= 0),
  output_per_token double precision not null check (output_per_token >= 0),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, model)
);

-- Saved trace-list filters of the dashboard: shared by every member of the tenant, changed or
-- removed by their author or an owner. `filters` is the dashboard's own JSON object.
create table if not exists saved_filters (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid not null,
  name text not null,
  filters jsonb not null,
  created_by text not null,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  updated_at timestamptz not null default date_trunc('milliseconds', now())
);
create index if not exists saved_filters_list on saved_filters (tenant_id, project_id, id);

-- Data retention (src/modules/retention; docs/api-decisions.md "Retention").
--
-- retention_days: traces that started more than this many days ago are removed with everything
-- derived from them, by the hourly `retention` job. Null (the default) keeps them forever.
alter table projects add column if not exists retention_days integer;
alter table projects drop constraint if exists projects_retention_days_check;
alter table projects add constraint projects_retention_days_check check (retention_days between 1 and 3650);

-- The sweep finds a project's expired traces by start time, a batch at a time.
create index if not exists trace_registry_project_started on trace_registry (tenant_id, project_id, started_at);
-- And a project's old webhook events (their deliveries and dispatches go with them, by cascade).
create index if not exists webhook_events_project_created on webhook_events (tenant_id, project_id, created_at)
  where project_id is not null;
-- Deleting an event's delivery log by event (the table's own index starts with the webhook).
create index if not exists webhook_deliveries_event on webhook_deliveries (event_id);

-- The last sweep of each project that has (or had) a retention period: when it ran, the cutoff it
-- applied and what it removed. Read by RetentionService.status (the compliance view).
create table if not exists retention_sweeps (
  project_id uuid primary key references projects (id) on delete cascade,
  tenant_id uuid not null references tenants (id) on delete cascade,
  swept_at timestamptz not null,
  cutoff timestamptz not null,
  removed jsonb not null default '{}'
);
create index if not exists retention_sweeps_tenant on retention_sweeps (tenant_id);

-- Anomalies found by the scan of the per-minute rollup (src/modules/anomalies): one row per
-- (project, metric, window), so a window judged again by a later scan is never a second anomaly.
create table if not exists anomalies (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid not null,
  metric text not null check (metric in ('latency_p95', 'error_rate', 'cost', 'tokens')),
  window_start timestamptz not null,
  window_end timestamptz not null,
  observed double precision not null,
  expected double precision not null,
  score double precision not null,
  severity text not null check (severity in ('warning', 'critical')),
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  unique (tenant_id, project_id, metric, window_start)
);
create index if not exists anomalies_list on anomalies (tenant_id, window_start desc, id desc);

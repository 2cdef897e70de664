-- CI gates: a dataset run with a pass-rate bar a pipeline waits on (`looptrace ci gate`).
create table if not exists ci_runs (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  dataset_id uuid not null,
  run_id uuid not null,
  min_pass_rate double precision not null check (min_pass_rate >= 0 and min_pass_rate <= 1),
  created_at timestamptz not null default now()
);

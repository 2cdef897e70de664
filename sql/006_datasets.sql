-- Datasets: curated traces (or spans) with an optional pass/fail label and expected output, and
-- the eval runs that score a dataset with one eval version.

create table if not exists datasets (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  name text not null,
  description text not null default '',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index if not exists datasets_tenant on datasets (tenant_id, id);

create table if not exists dataset_items (
  id uuid primary key,
  tenant_id uuid not null,
  dataset_id uuid not null references datasets (id) on delete cascade,
  trace_id uuid not null,
  span_id uuid,
  project_id uuid not null,
  label text check (label in ('pass', 'fail')),
  expected text,
  created_at timestamptz not null default now()
);
create index if not exists dataset_items_dataset on dataset_items (dataset_id, id);

create table if not exists eval_runs (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  dataset_id uuid not null references datasets (id) on delete cascade,
  eval_version_id uuid not null,
  status text not null default 'pending' check (status in ('pending', 'running', 'completed', 'failed')),
  item_count integer not null,
  completed_count integer not null default 0,
  pass_count integer not null default 0,
  fail_count integer not null default 0,
  error_count integer not null default 0,
  error_message text,
  -- One worker at a time scores a run: it holds the lease while it renews it. A worker that died
  -- stops renewing; once the lease has lapsed the next job for the run takes over.
  lease_token uuid,
  lease_expires_at timestamptz,
  -- Job `<id>-<dispatch_count>` is the run's current job; the reconcile bumps the count to add a
  -- new one, because BullMQ ignores an add whose job id it still remembers.
  dispatch_count integer not null default 1,
  dispatched_at timestamptz not null default now(),
  created_at timestamptz not null default now(),
  started_at timestamptz,
  completed_at timestamptz
);
create index if not exists eval_runs_dataset on eval_runs (tenant_id, dataset_id, id);
create index if not exists eval_runs_unfinished on eval_runs (dispatched_at) where status in ('pending', 'running');

-- The items of a run as they were when it was created: items added to the dataset later are not
-- in it, and an item deleted later is still scored as it was.
create table if not exists eval_run_items (
  run_id uuid not null references eval_runs (id) on delete cascade,
  item_id uuid not null,
  trace_id uuid not null,
  span_id uuid,
  expected text,
  primary key (run_id, item_id)
);

-- One row per scored item; the primary key is what lets a restarted worker skip what is done.
create table if not exists eval_run_results (
  run_id uuid not null,
  item_id uuid not null,
  score double precision,
  passed boolean,
  reasoning text,
  error text,
  prompt_tokens integer not null default 0,
  completion_tokens integer not null default 0,
  cost double precision not null default 0,
  latency_ms integer,
  created_at timestamptz not null default now(),
  primary key (run_id, item_id),
  foreign key (run_id, item_id) references eval_run_items (run_id, item_id) on delete cascade
);

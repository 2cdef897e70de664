-- Data-subject requests (src/modules/privacy): an owner asks for everything stored of one end user
-- (a session id, an external id or an end-user id) to be exported or erased. The row is the
-- truth; the `data-subject-requests` queue works on it and the reconcile re-queues lost work.
--
-- subject_hash: HMAC-SHA256 of (tenant, kind, value) under the server's secret key, kept for good.
-- subject_value: the raw value, needed to find the subject's traces, kept only while the request
-- is queued or running (the check below makes that a rule of the table, not a habit of the code).
create table if not exists data_subject_requests (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  type text not null check (type in ('erasure', 'export')),
  subject_kind text not null check (subject_kind in ('session_id', 'external_id', 'user_id')),
  subject_hash text not null,
  subject_value text,
  status text not null default 'queued' check (status in ('queued', 'running', 'completed', 'failed')),
  counts jsonb not null default '{}',
  error text,
  requested_by uuid not null,
  attempts integer not null default 0,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  started_at timestamptz,
  -- Renewed while a worker runs the request; a running request whose heartbeat stopped is taken over.
  heartbeat_at timestamptz,
  completed_at timestamptz,
  -- Exports only: the file is served until then, and deleted after.
  expires_at timestamptz,
  constraint data_subject_requests_value_while_open check (status in ('queued', 'running') or subject_value is null)
);
create index if not exists data_subject_requests_list on data_subject_requests (tenant_id, id desc);
create index if not exists data_subject_requests_open on data_subject_requests (created_at) where status in ('queued', 'running');
create index if not exists data_subject_requests_expiring on data_subject_requests (expires_at) where expires_at is not null;
create index if not exists data_subject_requests_subject on data_subject_requests (tenant_id, subject_hash);

-- The traces an erasure found, while it runs: its retries work on the same set even after part of
-- it is gone from the store the subject was found in. found → counted (its rows are in `counts`)
-- → erased. Deleted when the request finishes.
create table if not exists data_subject_request_traces (
  request_id uuid not null references data_subject_requests (id) on delete cascade,
  trace_id uuid not null,
  project_id uuid not null,
  state text not null default 'found' check (state in ('found', 'counted', 'erased')),
  primary key (request_id, trace_id)
);

-- An export's JSONL file, in chunks of about 1 MiB, so that any API instance can serve it.
create table if not exists data_subject_exports (
  request_id uuid not null references data_subject_requests (id) on delete cascade,
  seq integer not null,
  chunk text not null,
  primary key (request_id, seq)
);

-- Erasure deletes by trace id in tables whose keys do not start with it.
create index if not exists dataset_items_trace on dataset_items (tenant_id, trace_id);
create index if not exists eval_run_items_trace on eval_run_items (trace_id);
create index if not exists failure_cluster_traces_trace on failure_cluster_traces (tenant_id, trace_id);
create index if not exists failure_clusters_examples on failure_clusters using gin (example_trace_ids);
create index if not exists prompt_deployment_traces_trace on prompt_deployment_traces (trace_id);

-- Prompt registry and prompt deployments (5/6): versioned prompts per project, and the
-- cluster-targeted improvements that go through an A/B test, shipping, monitoring and rollback.

create table if not exists prompts (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid not null,
  name text not null,
  active_version_id uuid not null,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  updated_at timestamptz not null default date_trunc('milliseconds', now()),
  unique (tenant_id, project_id, name)
);
create index if not exists prompts_list on prompts (tenant_id, id);

-- created_by: 'user:<id>', 'apikey:<id>' or 'deployment:<id>' (a shipped proposal).
create table if not exists prompt_versions (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  prompt_id uuid not null references prompts (id) on delete cascade,
  version integer not null,
  content text not null,
  created_by text not null,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  unique (prompt_id, version)
);

-- Every move of a prompt's active pointer: what was active before, who moved it. A rollback
-- restores the version its deployment replaced; this keeps the whole history besides.
create table if not exists prompt_activations (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  prompt_id uuid not null references prompts (id) on delete cascade,
  version_id uuid not null,
  previous_version_id uuid,
  activated_by text not null,
  created_at timestamptz not null default date_trunc('milliseconds', now())
);
create index if not exists prompt_activations_prompt on prompt_activations (prompt_id, created_at);

-- lease_until: an ab_running deployment whose worker died is taken again once it passes.
-- monitor_baseline: the pass rate the shipped version must keep (docs/control-loop.md).
create table if not exists prompt_deployments (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid not null,
  prompt_id uuid not null references prompts (id) on delete cascade,
  cluster_signature text not null,
  status text not null check (status in
    ('proposed', 'ab_running', 'ab_passed', 'ab_failed', 'shipped', 'monitoring', 'regressed', 'rolled_back', 'rejected')),
  requested_by text not null,
  current_prompt text not null,
  proposed_prompt text not null default '',
  rationale text not null default '',
  from_version_id uuid not null,
  to_version_id uuid,
  ab_report jsonb,
  regression_metric double precision,
  monitor_baseline double precision,
  monitor_samples integer not null default 0,
  approved_by text,
  rejection_reason text,
  lease_until timestamptz,
  shipped_at timestamptz,
  rolled_back_at timestamptz,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  updated_at timestamptz not null default date_trunc('milliseconds', now())
);
-- One open deployment per prompt: two live candidates would fight over its active version.
create unique index if not exists prompt_deployments_open on prompt_deployments (prompt_id)
  where status in ('proposed', 'ab_running', 'ab_passed', 'shipped', 'monitoring', 'regressed');
create index if not exists prompt_deployments_list on prompt_deployments (tenant_id, created_at desc, id desc);
create index if not exists prompt_deployments_cluster on prompt_deployments (tenant_id, project_id, cluster_signature, created_at);
create index if not exists prompt_deployments_automatic on prompt_deployments (status, updated_at)
  where status in ('proposed', 'ab_running', 'ab_passed', 'shipped', 'monitoring', 'regressed');

-- Live traces the monitor has looked at once: whether they ran the deployment's version, so a
-- trace's spans are read once per deployment, not once per monitoring pass.
create table if not exists prompt_deployment_traces (
  deployment_id uuid not null references prompt_deployments (id) on delete cascade,
  trace_id uuid not null,
  runs_version boolean not null,
  primary key (deployment_id, trace_id)
);

-- Control loop (5/6): model routes, remediation policies and the control actions they take.

create table if not exists model_routes (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid,
  name text not null,
  model jsonb not null,
  fallbacks jsonb not null default '[]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index if not exists model_routes_tenant on model_routes (tenant_id, id);

-- active_since: when the policy was last enabled; it acts on traces stored (or scored) after it.
create table if not exists policies (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid not null,
  name text not null,
  enabled boolean not null default true,
  trigger jsonb not null,
  steps jsonb not null,
  max_retry_depth integer not null check (max_retry_depth between 1 and 10),
  max_cascade_depth integer not null check (max_cascade_depth between 1 and 20),
  require_approval boolean not null default false,
  active_since timestamptz not null default now(),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index if not exists policies_tenant on policies (tenant_id, id);
create index if not exists policies_enabled on policies (tenant_id) where enabled;

-- A chain is the actions one policy takes on one trace: its root has no parent, each later action
-- names the one whose failure caused it. settled_at: the action's outcome has been judged (its
-- re-scores compared, the next action decided), so the scan never judges it twice.
create table if not exists control_actions (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid not null,
  trace_id uuid not null,
  span_id uuid,
  policy_id uuid not null,
  chain_id uuid not null,
  parent_id uuid,
  step_index integer not null,
  type text not null check (type in ('retry', 'fallback_model', 'prompt_modification', 'escalate')),
  status text not null check (status in ('pending', 'pending_approval', 'approved', 'running', 'executed', 'failed', 'rejected')),
  require_approval boolean not null default false,
  escalation_reason text,
  metadata jsonb not null default '{}',
  input text,
  output text,
  model text,
  provider text,
  prompt_tokens integer,
  completion_tokens integer,
  latency_ms integer,
  cost double precision,
  error text,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  started_at timestamptz,
  executed_at timestamptz,
  settled_at timestamptz,
  decided_by text,
  decided_at timestamptz
);
-- One chain per (policy, trace) and one successor per action: a repeated scan or settle adds nothing.
create unique index if not exists control_actions_chain_root on control_actions (policy_id, trace_id) where parent_id is null;
create unique index if not exists control_actions_successor on control_actions (parent_id) where parent_id is not null;
create index if not exists control_actions_trace on control_actions (tenant_id, trace_id, type, status);
create index if not exists control_actions_list on control_actions (tenant_id, created_at desc, id desc);
create index if not exists control_actions_unsettled on control_actions (created_at) where settled_at is null;
create index if not exists control_actions_retry_cap on control_actions (tenant_id, project_id, created_at)
  where escalation_reason = 'retry_threshold_exceeded';

-- Evaluation: eval rules (online evaluation), their immutable versions, evaluations, the monthly
-- eval quota, and the outbox of stored traces that enabled rules still have to look at.

create table if not exists eval_rules (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid,
  name text not null,
  metric_name text not null,
  filter jsonb not null default '{}',
  sampling_rate double precision not null check (sampling_rate >= 0 and sampling_rate <= 1),
  config jsonb not null,
  threshold double precision not null check (threshold >= 0 and threshold <= 1),
  min_score_drop double precision not null default 0 check (min_score_drop >= 0),
  enabled boolean not null default true,
  current_version_id uuid not null,
  version integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index if not exists eval_rules_tenant on eval_rules (tenant_id, id);
create index if not exists eval_rules_enabled on eval_rules (tenant_id) where enabled;

-- A snapshot of a rule per create/update. Never changed or removed with its rule: evaluations and
-- dataset runs keep pointing at the exact configuration that scored them.
create table if not exists eval_versions (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  rule_id uuid not null,
  version integer not null,
  name text not null,
  metric_name text not null,
  project_id uuid,
  filter jsonb not null,
  sampling_rate double precision not null,
  config jsonb not null,
  threshold double precision not null,
  min_score_drop double precision not null,
  enabled boolean not null,
  created_at timestamptz not null default now(),
  unique (rule_id, version)
);
create index if not exists eval_versions_tenant on eval_versions (tenant_id, id);

create table if not exists evaluations (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid not null,
  trace_id uuid not null,
  metric_name text not null,
  config jsonb not null,
  threshold double precision not null,
  rule_id uuid,
  eval_version_id uuid,
  status text not null default 'pending' check (status in ('pending', 'running', 'completed', 'failed')),
  score double precision,
  passed boolean,
  reasoning text,
  error text,
  judge_model text,
  prompt_tokens integer not null default 0,
  completion_tokens integer not null default 0,
  cost double precision not null default 0,
  latency_ms integer,
  attempts integer not null default 0,
  context text not null default 'fresh' check (context in ('fresh', 'remediation')),
  source_action_id uuid,
  original_evaluation_id uuid,
  -- Whole milliseconds, as the API shows them: a list cursor carries created_at, and a hidden
  -- microsecond part would make rows at a page boundary fall between two pages.
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  started_at timestamptz,
  completed_at timestamptz
);
create index if not exists evaluations_list on evaluations (tenant_id, created_at desc, id desc);
create index if not exists evaluations_trace on evaluations (tenant_id, trace_id);
create index if not exists evaluations_compare on evaluations (tenant_id, metric_name, created_at) where status = 'completed';
create index if not exists evaluations_unfinished on evaluations (created_at) where status in ('pending', 'running');
-- An enabled rule scores a trace once, however often the trace is looked at.
create unique index if not exists evaluations_rule_trace on evaluations (rule_id, trace_id) where rule_id is not null and context = 'fresh';

create table if not exists eval_usage (
  tenant_id uuid not null references tenants (id) on delete cascade,
  month date not null,
  evals bigint not null default 0,
  primary key (tenant_id, month)
);

-- Traces stored since enabled rules last looked, for tenants that have enabled rules. Written in
-- the same step that confirms a trace (native) or rolls it up (OTLP), drained by the eval-rules
-- job; a row is removed only in the transaction that creates the evaluations it leads to.
create table if not exists eval_candidates (
  tenant_id uuid not null,
  trace_id uuid not null,
  project_id uuid not null,
  started_at timestamptz not null,
  ready_at timestamptz not null default now(),
  primary key (tenant_id, trace_id)
);
create index if not exists eval_candidates_ready on eval_candidates (ready_at);

-- The outbox is filled by the registry itself, in the statement that makes a trace readable: a
-- native trace when it turns committed (group commit confirmation, settlement, or a restored
-- registration), an OTLP trace when a rollup has written its trace row. So no stored trace of a
-- tenant with an enabled rule can be missed, whatever process dies when. OTLP candidates wait
-- 5 s (an exporter's batch interval) so that a trace's later spans are usually in before scoring.
create or replace function eval_candidates_from_registry() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    insert into eval_candidates (tenant_id, trace_id, project_id, started_at)
    select n.tenant_id, n.trace_id, n.project_id, n.started_at from registry_new n
    where n.state = 'committed' and n.source = 'native'
      and exists (select 1 from eval_rules e
                  where e.tenant_id = n.tenant_id and e.enabled and (e.project_id is null or e.project_id = n.project_id))
    on conflict do nothing;
  else
    insert into eval_candidates (tenant_id, trace_id, project_id, started_at, ready_at)
    select n.tenant_id, n.trace_id, n.project_id, n.started_at,
           case when n.source = 'otlp' then now() + interval '5 seconds' else now() end
    from registry_new n join registry_old o on o.tenant_id = n.tenant_id and o.trace_id = n.trace_id
    where ((n.source = 'native' and n.state = 'committed' and o.state = 'pending')
           or (n.source = 'otlp' and n.rolled_up_at is not null and n.rolled_up_at is distinct from o.rolled_up_at))
      and exists (select 1 from eval_rules e
                  where e.tenant_id = n.tenant_id and e.enabled and (e.project_id is null or e.project_id = n.project_id))
    on conflict do nothing;
  end if;
  return null;
end $$;

drop trigger if exists trace_registry_eval_candidates_insert on trace_registry;
create trigger trace_registry_eval_candidates_insert after insert on trace_registry
  referencing new table as registry_new for each statement execute function eval_candidates_from_registry();
drop trigger if exists trace_registry_eval_candidates_update on trace_registry;
create trigger trace_registry_eval_candidates_update after update on trace_registry
  referencing old table as registry_old new table as registry_new for each statement execute function eval_candidates_from_registry();

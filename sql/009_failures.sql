-- Failure detection: failure rules, the clusters their matches group into, which traces each
-- cluster holds, and the outbox of stored traces the detector still has to look at.

create table if not exists failure_rules (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid,
  name text not null,
  enabled boolean not null default true,
  match jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index if not exists failure_rules_tenant on failure_rules (tenant_id, id);
create index if not exists failure_rules_enabled on failure_rules (tenant_id) where enabled;

-- One row per (project, signature): the signature is a hash of project, type and normalized
-- error, so the same failure lands in the same row in every run. Times are span times (whole
-- milliseconds), the list's keyset cursor carries last_seen.
create table if not exists failure_clusters (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid not null,
  type text not null,
  signature text not null,
  sample_error text,
  first_seen timestamptz not null,
  last_seen timestamptz not null,
  count bigint not null default 0,
  trace_count bigint not null default 0,
  example_trace_ids uuid[] not null default '{}',
  last_notified_at timestamptz,
  created_at timestamptz not null default date_trunc('milliseconds', now()),
  updated_at timestamptz not null default now(),
  unique (tenant_id, project_id, signature)
);
create index if not exists failure_clusters_list on failure_clusters (tenant_id, last_seen desc, id desc);

-- How many matching spans each trace gave its cluster. An OTLP trace is looked at again after
-- every rollup; counting against this row keeps count and trace_count exact however often.
create table if not exists failure_cluster_traces (
  tenant_id uuid not null,
  cluster_id uuid not null references failure_clusters (id) on delete cascade,
  trace_id uuid not null,
  spans integer not null,
  primary key (cluster_id, trace_id)
);

create table if not exists failure_candidates (
  tenant_id uuid not null,
  trace_id uuid not null,
  project_id uuid not null,
  started_at timestamptz not null,
  ready_at timestamptz not null default now(),
  primary key (tenant_id, trace_id)
);
create index if not exists failure_candidates_ready on failure_candidates (ready_at);

-- One trigger feeds every outbox of newly readable traces (eval rules in 005, failure rules
-- here), replacing 005's eval-only one: a trace is readable once a native write has committed (group
-- commit confirmation, settlement, or a restored registration) or an OTLP rollup has written its
-- trace row; each outbox takes the traces of tenants with an enabled rule of its kind. OTLP
-- candidates wait 5 s (an exporter's batch interval) so that late spans are usually in.
create or replace function enqueue_trace_candidates(
  tenant_ids uuid[], trace_ids uuid[], project_ids uuid[], started_ats timestamptz[], ready_ats timestamptz[]
) returns void language sql as $$
  with readable as (
    select * from unnest(tenant_ids, trace_ids, project_ids, started_ats, ready_ats) as x(tenant_id, trace_id, project_id, started_at, ready_at)
  ), for_evals as (
    insert into eval_candidates (tenant_id, trace_id, project_id, started_at, ready_at)
    select x.tenant_id, x.trace_id, x.project_id, x.started_at, x.ready_at from readable x
    where exists (select 1 from eval_rules e
                  where e.tenant_id = x.tenant_id and e.enabled and (e.project_id is null or e.project_id = x.project_id))
    on conflict do nothing
  )
  insert into failure_candidates (tenant_id, trace_id, project_id, started_at, ready_at)
  select x.tenant_id, x.trace_id, x.project_id, x.started_at, x.ready_at from readable x
  where exists (select 1 from failure_rules r
                where r.tenant_id = x.tenant_id and r.enabled and (r.project_id is null or r.project_id = x.project_id))
  on conflict do nothing;
$$;

create or replace function stored_trace_candidates() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    perform enqueue_trace_candidates(array_agg(n.tenant_id), array_agg(n.trace_id), array_agg(n.project_id), array_agg(n.started_at), array_agg(now()))
    from registry_new n
    where n.state = 'committed' and n.source = 'native';
  else
    perform enqueue_trace_candidates(array_agg(n.tenant_id), array_agg(n.trace_id), array_agg(n.project_id), array_agg(n.started_at),
                                     array_agg(case when n.source = 'otlp' then now() + interval '5 seconds' else now() end))
    from registry_new n join registry_old o on o.tenant_id = n.tenant_id and o.trace_id = n.trace_id
    where (n.source = 'native' and n.state = 'committed' and o.state = 'pending')
       or (n.source = 'otlp' and n.rolled_up_at is not null and n.rolled_up_at is distinct from o.rolled_up_at);
  end if;
  return null;
end $$;

drop trigger if exists trace_registry_eval_candidates_insert on trace_registry;
drop trigger if exists trace_registry_eval_candidates_update on trace_registry;
drop function if exists eval_candidates_from_registry();
drop trigger if exists trace_registry_candidates_insert on trace_registry;
create trigger trace_registry_candidates_insert after insert on trace_registry
  referencing new table as registry_new for each statement execute function stored_trace_candidates();
drop trigger if exists trace_registry_candidates_update on trace_registry;
create trigger trace_registry_candidates_update after update on trace_registry
  referencing old table as registry_old new table as registry_new for each statement execute function stored_trace_candidates();

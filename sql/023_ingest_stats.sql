-- Received, stored and refused ingest counts per tenant, project and UTC minute (GET /v1/ingest/stats,
-- src/modules/ingest/stats/). The minute is when the request arrived, for every count of it, so
-- a minute adds up: spans_received = spans_stored + the sum of refused_spans (likewise traces).
-- project_id is the nil UUID for refusals that name no project of the tenant (project_not_found,
-- a session token without project_id); the API shows it as null.
-- Stored counts are added by the transactions that store (the OTLP group commit, the native
-- confirmation), quota refusals by the claim that refuses them, everything else from memory about
-- once a second (stats/counters.ts). No foreign key to tenants: the counts ride on ingest's own
-- transactions, like trace_registry.
-- fillfactor leaves room for HOT updates: every update changes counts only, never the key.
create table if not exists ingest_stats (
  tenant_id uuid not null,
  minute timestamptz not null,
  project_id uuid not null,
  traces_received bigint not null default 0,
  traces_stored bigint not null default 0,
  spans_received bigint not null default 0,
  spans_stored bigint not null default 0,
  -- {reason: count}, only reasons that occurred.
  refused_spans jsonb not null default '{}'::jsonb,
  refused_traces jsonb not null default '{}'::jsonb,
  -- (tenant, minute) first: a range of minutes of all projects, or of one, is one index range.
  primary key (tenant_id, minute, project_id)
) with (fillfactor = 70);

-- Adds two {reason: count} objects key by key (the upsert of a count row).
create or replace function ingest_counts_add(a jsonb, b jsonb) returns jsonb
language sql immutable parallel safe as $$
  select case
    when b = '{}'::jsonb then a
    when a = '{}'::jsonb then b
    else (
      select coalesce(jsonb_object_agg(key, total), '{}'::jsonb)
      from (
        select key, sum(value::bigint) as total
        from (select key, value from jsonb_each_text(a) union all select key, value from jsonb_each_text(b)) as both_sides
        group by key
      ) as summed
    )
  end
$$;

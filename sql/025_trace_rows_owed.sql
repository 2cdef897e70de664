-- OTLP traces owed a row rebuilt from their stored spans: a settlement committed them after their
-- writer died before saving their state (registry-repo.ts commitPending), and the reconcile pass
-- rebuilds them (TraceWritePath.rebuildOwed), oldest first. A table of its own rather than a
-- partial index on trace_registry: every OTLP commit rewrites spans_at and rolled_up_at, and an
-- index on them would make each of those updates write every index of the registry (no HOT
-- update); without one, finding the owed traces read the whole registry every 10 s (about 0.4 s
-- of both cores at 10M traces, measured on the bench dataset).
create table if not exists trace_rows_owed (
  tenant_id uuid not null,
  trace_id uuid not null,
  owed_since timestamptz not null default now(),
  primary key (tenant_id, trace_id),
  foreign key (tenant_id, trace_id) references trace_registry (tenant_id, trace_id) on delete cascade
);
create index if not exists trace_rows_owed_since on trace_rows_owed (owed_since);

insert into trace_rows_owed (tenant_id, trace_id, owed_since)
select tenant_id, trace_id, spans_at from trace_registry
where source = 'otlp' and spans_at is not null and (rolled_up_at is null or spans_at > rolled_up_at)
on conflict do nothing;

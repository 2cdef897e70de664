-- A registry row is `pending` from its reservation until the ClickHouse write holding its trace
-- commits, then `committed`. Only a committed trace is a 409; a pending one whose writer is gone
-- is settled against ClickHouse (present: committed; absent: released with its quota).
-- Rows written before this migration, or by a replica still running the previous release during
-- a rolling deploy, default to committed: the previous release's behaviour, never a lost write.
alter table trace_registry add column if not exists state text not null default 'committed';
alter table trace_registry drop constraint if exists trace_registry_state_check;
alter table trace_registry add constraint trace_registry_state_check check (state in ('pending', 'committed'));
-- The process (ingest_writers.id) whose group commit carries the pending write.
alter table trace_registry add column if not exists writer uuid;
-- OTLP only: when spans of the trace last committed, and which of those commits the trace row
-- has been rolled up from. spans_at > rolled_up_at is a rollup owed, whatever Redis remembers.
alter table trace_registry add column if not exists spans_at timestamptz;
alter table trace_registry add column if not exists rolled_up_at timestamptz;

create index if not exists trace_registry_pending on trace_registry (created_at) where state = 'pending';
create index if not exists trace_registry_rollup_owed on trace_registry (spans_at)
  where source = 'otlp' and spans_at is not null and (rolled_up_at is null or spans_at > rolled_up_at);

-- One row per process start that ingests. A process is presumed alive until it retires: on a
-- graceful shutdown, or when the next process of the same instance (host and port, or
-- LOOPTRACE_INSTANCE_ID) starts, which is how a restart after a crash settles its predecessor's
-- writes at once instead of waiting out the batcher's write time-out.
create table if not exists ingest_writers (
  id uuid primary key,
  instance text not null,
  started_at timestamptz not null default now(),
  retired_at timestamptz
);
create index if not exists ingest_writers_live on ingest_writers (instance) where retired_at is null;

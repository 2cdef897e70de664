-- Dirty (tenant, minute) slices of the metrics rollup (trace_metrics_1m in ClickHouse): minutes whose
-- traces were written or rewritten and must be recomputed. A work list, not data: a row lives from
-- the first mark until a recomputation that saw every mark completes it.
-- due_at: when the minute may next be claimed (a mark: now; a claim: the end of its lease).
-- generation: bumped by every mark; completion deletes a row only while it still holds the
-- generation that was claimed, so a mark made during a recomputation is never lost.
-- No foreign key to tenants: marks ride on every ingest group commit, like trace_registry.
-- fillfactor leaves room for HOT updates: re-marking a minute that is already due changes only
-- its generation.
create table if not exists metrics_dirty_minutes (
  tenant_id uuid not null,
  minute timestamptz not null,
  due_at timestamptz not null,
  generation bigint not null default 1,
  primary key (tenant_id, minute)
) with (fillfactor = 80);

-- claim: the oldest due minutes first.
create index if not exists metrics_dirty_minutes_due_idx on metrics_dirty_minutes (due_at);

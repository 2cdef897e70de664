-- The OTLP trace row is derived in the ingest path (src/modules/ingest/otlp/derive.ts): each group
-- commit folds the spans it carries into the trace's state, kept here on the registry row, and
-- writes the trace row from it. The state records the span ids already counted (re-sent spans are
-- not summed twice), the running totals, each order-dependent field with the rank that decides it,
-- and where the row was last written (its started_at key and version).
-- Null for native traces, and for OTLP traces from before this migration (the next commit that
-- touches one rebuilds its state from its stored spans).
alter table trace_registry add column if not exists otlp_state jsonb;

-- Rollups are no longer owed: the rows are written with the spans (rolled_up_at now says when a
-- commit last changed the row; sql/009's trigger still takes it as "readable anew").
drop index if exists trace_registry_rollup_owed;

-- Triggers named after what they do. The only triggers are the pair on trace_registry that sql/009
-- created (its body is there, unchanged): when a trace becomes readable (a native write commits, an
-- OTLP rollup writes its trace row) they queue it for the tenant's enabled rules, in eval_candidates
-- (eval rules, drained by src/modules/evals/online.ts) and failure_candidates (failure rules,
-- drained by src/modules/failures/detector.ts), through enqueue_trace_candidates() (sql/009).
--   trace_registry_candidates_insert -> queue_readable_traces_for_rules_on_insert
--   trace_registry_candidates_update -> queue_readable_traces_for_rules_on_update
--   stored_trace_candidates()        -> queue_readable_traces_for_rules()
-- A trigger calls its function by oid, so the renames change nothing they do. Idempotent: each
-- rename runs only while the old name is there. A test (test/stores/triggers.test.ts) lists the
-- triggers the code relies on and fails when one is missing or named otherwise.
do $$
begin
  if exists (select 1 from pg_trigger where tgrelid = 'trace_registry'::regclass and tgname = 'trace_registry_candidates_insert') then
    alter trigger trace_registry_candidates_insert on trace_registry rename to queue_readable_traces_for_rules_on_insert;
  end if;
  if exists (select 1 from pg_trigger where tgrelid = 'trace_registry'::regclass and tgname = 'trace_registry_candidates_update') then
    alter trigger trace_registry_candidates_update on trace_registry rename to queue_readable_traces_for_rules_on_update;
  end if;
  if to_regprocedure('stored_trace_candidates()') is not null then
    alter function stored_trace_candidates() rename to queue_readable_traces_for_rules;
  end if;
end $$;

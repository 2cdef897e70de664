-- A remediation re-score (5/6) scores the output a control action produced, not the trace's own:
-- that output is kept with the evaluation, so a retry of its job scores the same text.
alter table evaluations add column if not exists scored_output text;
create index if not exists evaluations_source_action on evaluations (tenant_id, source_action_id) where source_action_id is not null;

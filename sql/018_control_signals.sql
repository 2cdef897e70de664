-- What the control loop's policies react to, handed over by the modules that know it in the
-- transaction that learns it: a trace joining a failure cluster (failures module), a rule's fresh
-- evaluation of a trace that did not pass (evals module). Replaces the trigger scan's direct reads
-- of those modules' tables; drained by control-scan, a row removed once its trace has been offered
-- to every matching policy.
create table if not exists control_signals (
  id uuid primary key,
  tenant_id uuid not null,
  project_id uuid not null,
  trace_id uuid not null,
  failure_type text,
  cluster_signature text,
  eval_rule_id uuid,
  at timestamptz not null default now(),
  ready_at timestamptz not null default now()
);
create unique index if not exists control_signals_once on control_signals
  (tenant_id, trace_id, coalesce(cluster_signature, ''), coalesce(eval_rule_id::text, ''));
create index if not exists control_signals_ready on control_signals (ready_at);

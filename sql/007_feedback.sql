-- Feedback: a score, label and comment that a user (or an API key) gives one trace. project_id is
-- the trace's, copied from the trace registry at creation, so a project filter needs no join.
create table if not exists feedback (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid not null,
  trace_id uuid not null,
  score double precision not null check (score >= 0 and score <= 1),
  label text not null check (label in ('good', 'bad', 'neutral')),
  comment text,
  metadata jsonb not null default '{}',
  -- The user id of a session, or the id of an API key.
  created_by text not null,
  -- Whole milliseconds, as the API shows it: a created_at read back is then an exact from/to bound
  -- and keyset position, where a hidden microsecond part would skip or repeat rows.
  created_at timestamptz not null default date_trunc('milliseconds', now())
);
create index if not exists feedback_list on feedback (tenant_id, created_at desc, id desc);
create index if not exists feedback_trace on feedback (tenant_id, trace_id);

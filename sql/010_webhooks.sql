-- Webhooks: tenants' HTTPS receivers, the events emitted to them, one dispatch per (event,
-- webhook) that carries the delivery's state, and the log of every delivery attempt.
create table if not exists webhooks (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  url text not null,
  -- AES-256-GCM under LOOPTRACE_SECRET_KEY; the secret keys the HMAC of every delivery.
  secret_ciphertext text not null,
  events text[] not null,
  enabled boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- 'user:<id>' or 'apikey:<id>', as on llm_connections.
  created_by text
);
create index if not exists webhooks_tenant_idx on webhooks (tenant_id, id);

-- What happened, once, whoever it goes to. `data` is the event's `data` field as delivered.
create table if not exists webhook_events (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid,
  type text not null,
  data jsonb not null,
  created_at timestamptz not null default now()
);

-- The outbox of deliveries: written in the emitter's transaction, so an event that commits always
-- has its dispatches, whatever Redis does. 'pending' rows are handed to the `webhooks` queue by
-- the emitter (after its commit) or by the webhooks-reconcile sweep (never queued, or queued so
-- long ago that the job must be lost); the job id is the dispatch id, so handing one over twice
-- runs it once. Final states: delivered, failed (then in dlq), skipped (webhook disabled).
create table if not exists webhook_dispatches (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  webhook_id uuid not null references webhooks (id) on delete cascade,
  event_id uuid not null references webhook_events (id) on delete cascade,
  state text not null default 'pending' check (state in ('pending', 'delivered', 'failed', 'skipped')),
  attempts int not null default 0,
  queued_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (event_id, webhook_id)
);
create index if not exists webhook_dispatches_pending_idx on webhook_dispatches (updated_at) where state = 'pending';

-- The delivery log: one row per attempt. status 0 = no HTTP answer (DNS, refused, TLS, time-out,
-- URL refused by the guard).
create table if not exists webhook_deliveries (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  webhook_id uuid not null references webhooks (id) on delete cascade,
  event_id uuid not null references webhook_events (id) on delete cascade,
  attempt int not null,
  status int not null,
  duration_ms int not null,
  error text,
  created_at timestamptz not null default now()
);
create index if not exists webhook_deliveries_webhook_idx on webhook_deliveries (tenant_id, webhook_id, id desc);

-- The dead-letter queue of DESIGN.md §6, shared by every queue: work that exhausted its attempts.
-- `kind` names the queue's subject ('webhook_delivery': ref_id = the dispatch id), `payload` what
-- is needed to retry it. An owner resolves an entry (resolution says how: retried, discarded).
create table if not exists dlq (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  kind text not null,
  ref_id uuid not null,
  payload jsonb not null,
  attempts int not null,
  last_error text not null,
  created_at timestamptz not null default now(),
  resolved_at timestamptz,
  resolution text
);
create index if not exists dlq_tenant_idx on dlq (tenant_id, id desc);
-- One open entry per subject: a final attempt that runs twice dead-letters once.
create unique index if not exists dlq_open_ref_idx on dlq (kind, ref_id) where resolved_at is null;

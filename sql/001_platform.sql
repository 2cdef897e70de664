-- Tenancy, identities, projects and API keys.
create table if not exists tenants (
  id uuid primary key,
  name text not null,
  plan text not null check (plan in ('starter', 'pro', 'team', 'business', 'enterprise')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table if not exists users (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  idp_subject text not null,
  email text,
  given_name text,
  family_name text,
  role text not null check (role in ('owner', 'member', 'viewer')),
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  unique (tenant_id, idp_subject)
);

create table if not exists projects (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  name text not null,
  archived_at timestamptz,
  prompt_autoship_enabled boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index if not exists projects_tenant_id_idx on projects (tenant_id, id);

create table if not exists api_keys (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  project_id uuid not null references projects (id),
  name text not null,
  prefix text not null,
  key_hash bytea not null unique,
  scopes text[] not null default '{}',
  created_by_user_id uuid references users (id) on delete set null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
create index if not exists api_keys_tenant_id_idx on api_keys (tenant_id, id);

-- Audit chain: one hash chain per tenant; audit_heads holds the row lock that orders appends.
create table if not exists audit_heads (
  tenant_id uuid primary key references tenants (id) on delete cascade,
  seq bigint not null,
  head_hash text not null
);

create table if not exists audit_log (
  tenant_id uuid not null references tenants (id) on delete cascade,
  seq bigint not null,
  id uuid not null,
  created_at timestamptz not null,
  actor_type text not null,
  actor_id text,
  action text not null,
  resource_type text,
  resource_id text,
  request_id text,
  details jsonb not null default '{}',
  prev_hash text not null,
  hash text not null,
  primary key (tenant_id, seq)
);
create index if not exists audit_log_tenant_created_idx on audit_log (tenant_id, created_at);

create table if not exists audit_anchors (
  tenant_id uuid not null references tenants (id) on delete cascade,
  date date not null,
  head_hash text not null,
  row_count bigint not null,
  s3_key text not null,
  signature text not null,
  key_id text not null,
  anchored_at timestamptz not null,
  primary key (tenant_id, date)
);

-- Service-wide signing keys (audit anchors). The private half is AES-256-GCM encrypted.
create table if not exists signing_keys (
  purpose text primary key,
  key_id text not null,
  private_key_enc text not null,
  public_key_pem text not null,
  created_at timestamptz not null default now()
);

-- Tenants' own LLM vendor credentials (bring your own key). The key is kept only encrypted
-- (AES-256-GCM under LOOPTRACE_SECRET_KEY); its last four characters tell keys apart in lists.
create table if not exists llm_connections (
  id uuid primary key,
  tenant_id uuid not null references tenants (id) on delete cascade,
  provider text not null check (provider in ('openai', 'anthropic')),
  name text not null,
  base_url text,
  api_key_ciphertext text not null,
  api_key_last4 text not null,
  default_model text,
  created_at timestamptz not null default now(),
  -- 'user:<id>' or 'apikey:<id>': who added it, for the dashboard; null when neither is known.
  created_by text
);
create index if not exists llm_connections_tenant_idx on llm_connections (tenant_id, id);
-- The newest connection of a provider is the one calls use.
create index if not exists llm_connections_tenant_provider_idx on llm_connections (tenant_id, provider, id desc);

-- Members and seats (docs/api-decisions.md): `users` becomes the tenant's membership, the source of
-- truth for roles. A row is `active` (signed in at least once), `invited` (an owner invited the
-- email; no IdP subject until the first sign-in with that email claims it) or `removed` (kept, with
-- removed_at: audit rows and created_by references point at it). Seats = active + invited.
alter table users add column if not exists status text not null default 'active'
  check (status in ('active', 'invited', 'removed'));
alter table users add column if not exists invited_by uuid references users (id) on delete set null;
alter table users add column if not exists removed_at timestamptz;

-- An invitation has no subject until it is claimed. The existing unique (tenant_id, idp_subject)
-- then holds only where the subject is set: NULLs are distinct.
alter table users alter column idp_subject drop not null;
-- An invited person has not been seen yet.
alter table users alter column last_seen_at drop not null;

do $$
begin
  if not exists (select 1 from pg_constraint where conname = 'users_invited_email_present') then
    alter table users add constraint users_invited_email_present check (status <> 'invited' or email is not null);
  end if;
end $$;

-- One pending invitation per email and tenant, whatever its case.
create unique index if not exists users_invited_email on users (tenant_id, lower(email)) where status = 'invited';
-- GET /v1/members and the seat count: the tenant's non-removed rows in id (creation) order.
create index if not exists users_members on users (tenant_id, id) where status <> 'removed';

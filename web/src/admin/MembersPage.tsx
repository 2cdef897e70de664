import { LoadMore } from '../ui/lists';
import { useEffect, useReducer, useState, type FormEvent } from 'react';
import { api, noContent, unwrap, type Ok, type Role } from '../api/client';
import { useMe } from '../shell/MeContext';
import { formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { ConfirmButton } from '../ui/ConfirmButton';
import { Reason, usePermission } from '../ui/permission';
import { personName } from './people';
import { useAction } from '../ui/useAction';
import { usePages } from '../api/usePages';

type Member = Ok<'/v1/members'>['items'][number];
const ROLES: Role[] = ['owner', 'member', 'viewer'];

export function MembersPage() {
  const me = useMe();
  const [version, reload] = useReducer((n: number) => n + 1, 0);
  const list = usePages(
    `members:${version}`,
    (cursor, signal) => unwrap(api.GET('/v1/members', { params: { query: { limit: 100, cursor } }, signal })),
    (page) => page.items,
  );
  const change = useAction();
  const mayChange = usePermission('PATCH /v1/members/{id}');
  const mayRemove = usePermission('DELETE /v1/members/{id}');
  useEffect(() => {
    document.title = 'Members · Looptrace';
  }, []);

  return (
    <>
      <h1>Members and seats</h1>
      <p className="hint">
        Active and invited members each hold a seat of the plan. Invitations become active at the person&apos;s first sign-in with that email.
      </p>
      <InviteForm onInvited={reload} />
      <h2>Members</h2>
      <Reason id="member-change-reason" permission={mayChange} what="Changing roles and removing members" />
      {change.error !== undefined && <ErrorNotice error={change.error} />}
      {list.error !== undefined && <ErrorNotice error={list.error} />}
      {list.loading && <p aria-live="polite">Loading the members…</p>}
      {list.items.length > 0 && (
        <table className="admin">
          <caption className="visually-hidden">Members of this tenant, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">Member</th>
              <th scope="col">Status</th>
              <th scope="col">Role</th>
              <th scope="col">Joined or invited</th>
              <th scope="col">Last seen</th>
              <th scope="col">Remove</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((member) => (
              <MemberRow
                key={`${member.id}:${member.role}`}
                member={member}
                self={member.id === me.user.id}
                busy={change.busy !== null}
                mayChange={mayChange.allowed}
                mayRemove={mayRemove.allowed}
                onRole={(role) =>
                  void change
                    .run(member.id, () => unwrap(api.PATCH('/v1/members/{id}', { params: { path: { id: member.id } }, body: { role } })))
                    .then((done) => done && reload())
                }
                onRemove={() =>
                  void change
                    .run(member.id, () => noContent(api.DELETE('/v1/members/{id}', { params: { path: { id: member.id } } })))
                    .then((done) => done && reload())
                }
              />
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={list} />
    </>
  );
}

function MemberRow({
  member,
  self,
  busy,
  mayChange,
  mayRemove,
  onRole,
  onRemove,
}: {
  member: Member;
  self: boolean;
  busy: boolean;
  mayChange: boolean;
  mayRemove: boolean;
  onRole: (role: Role) => void;
  onRemove: () => void;
}) {
  const [role, setRole] = useState<Role>(member.role);
  const name = personName(member, `user ${member.id.slice(0, 8)}`);
  return (
    <tr>
      <td>
        {name}
        {self && <span className="muted"> (you)</span>}
        {member.email && name !== member.email && <div className="muted">{member.email}</div>}
      </td>
      <td>
        <span className={`badge ${member.status === 'active' ? 'ok' : 'neutral'}`}>{member.status}</span>
      </td>
      <td>
        <form
          className="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            onRole(role);
          }}
        >
          <select
            aria-label={`Role of ${name}`}
            value={role}
            onChange={(e) => setRole(e.target.value as Role)}
            disabled={!mayChange || busy}
            aria-describedby={mayChange ? undefined : 'member-change-reason'}
          >
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
          <button type="submit" disabled={!mayChange || busy || role === member.role} aria-describedby={mayChange ? undefined : 'member-change-reason'}>
            Change role<span className="visually-hidden"> of {name}</span>
          </button>
        </form>
      </td>
      <td>{formatTime(member.created_at)}</td>
      <td>{member.last_seen_at ? formatTime(member.last_seen_at) : '—'}</td>
      <td>
        <ConfirmButton
          action="Remove" subject={name}
          confirmLabel={member.status === 'invited' ? 'Cancel the invitation' : 'Remove now'}
          question={member.status === 'invited' ? `Cancel the invitation of ${name}?` : `Remove ${name}? Their sessions stop within 30 s.`}
          disabled={!mayRemove || busy}
          describedBy={mayRemove ? undefined : 'member-change-reason'}
          onConfirm={onRemove}
        />
      </td>
    </tr>
  );
}

function InviteForm({ onInvited }: { onInvited: () => void }) {
  const allowed = usePermission('POST /v1/members');
  const invite = useAction();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const [done, setDone] = useState('');
  const disabled = !allowed.allowed || invite.busy !== null;
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone('');
    const member = await invite.run('invite', () => unwrap(api.POST('/v1/members', { body: { email, role } })));
    if (member) {
      setDone(`Invited ${member.email ?? email} as ${member.role}.`);
      setEmail('');
      onInvited();
    }
  };
  return (
    <form className="card admin-form" onSubmit={(e) => void submit(e)} aria-labelledby="invite-title" aria-describedby={allowed.allowed ? undefined : 'invite-reason'}>
      <h2 id="invite-title">Invite someone</h2>
      <Reason id="invite-reason" permission={allowed} what="Inviting" />
      <div className="form-row">
        <label>
          Email
          <input type="email" value={email} onChange={(e) => setEmail(e.target.value)} required disabled={disabled} />
        </label>
        <label>
          Role
          <select value={role} onChange={(e) => setRole(e.target.value as Role)} disabled={disabled}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" className="primary" disabled={disabled}>
          {invite.busy ? 'Inviting…' : 'Invite'}
        </button>
      </div>
      <p role="status" className="hint">
        {done}
      </p>
      {invite.error !== undefined && <ErrorNotice error={invite.error} />}
    </form>
  );
}

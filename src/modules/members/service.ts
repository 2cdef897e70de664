import { z } from 'zod';
import type { AuthContext, Authenticator, Role, SessionClaims, SessionMember, SessionMembers } from '../../platform/auth.js';
import { decodeCursor, toPage } from '../../platform/cursor.js';
import { AppError, conflict, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { PLAN_NAMES, PLANS, planRank, type PlanName } from '../../platform/plans.js';
import type { MemberQueries, MemberRepository, MemberRow, SignInProfile } from './repo.js';
import type { InviteMember, ListMembersQuery, Member } from './schemas.js';

const listCursor = z.object({ id: z.guid() });

const toMember = (row: MemberRow): Member => ({
  id: row.id,
  email: row.email,
  first_name: row.given_name,
  last_name: row.family_name,
  role: row.role,
  // Removed rows never leave this module as members.
  status: row.status === 'invited' ? 'invited' : 'active',
  invited_by: row.invited_by,
  created_at: row.created_at.toISOString(),
  last_seen_at: row.last_seen_at?.toISOString() ?? null,
});

/** The lowest plan with more seats than `plan`. */
function planWithMoreSeats(plan: PlanName): PlanName {
  const cap = PLANS[plan].seats;
  const above = PLAN_NAMES.filter((p) => planRank(p) > planRank(plan));
  return above.find((p) => PLANS[p].seats === null || (cap !== null && PLANS[p].seats! > cap)) ?? 'enterprise';
}

function seatsExceeded(plan: PlanName, cap: number): AppError {
  return new AppError(402, 'seats_quota_exceeded', `the ${plan} plan has ${cap} seats (active and invited members), all taken`, {
    required_plan: planWithMoreSeats(plan),
  });
}

const unauthorized = (message: string) => new AppError(401, 'unauthorized', message);
const lastOwner = () => conflict('member.last_owner', 'the last owner of a tenant cannot be demoted or removed; make another member owner first');

/**
 * The tenant's members: the source of truth for roles. A session's `role` claim counts only when
 * its person is first seen without an invitation (just-in-time provisioning); afterwards the stored
 * role wins. Every change of the membership runs under the tenant row's lock (repo.withTenantLock),
 * so the seat cap and the last-owner rule hold under concurrent requests.
 */
export class MemberService implements SessionMembers {
  constructor(
    private readonly repo: MemberRepository,
    private readonly sessions: Pick<Authenticator, 'forgetUser'>,
  ) {}

  /** Called by the authenticator for a verified session token not in its cache. */
  async signIn(claims: SessionClaims): Promise<SessionMember> {
    const tenantId = claims.tenant_id;
    const profile: SignInProfile = {
      sub: claims.sub,
      email: claims.email ?? null,
      given_name: claims.given_name ?? null,
      family_name: claims.family_name ?? null,
    };
    const seen = await this.repo.touchSubject(tenantId, profile);
    if (!seen) throw unauthorized('unknown tenant');
    if (seen.status === 'active') return { userId: seen.id!, role: seen.role!, plan: seen.plan };
    // Checked before taking the tenant lock: a removed member's requests never queue behind it.
    if (seen.status === 'removed') throw unauthorized('membership removed');

    const row = await this.repo.withTenantLock(tenantId, async (q, plan) => {
      const own = await q.findBySubject(tenantId, profile.sub);
      if (own?.status === 'removed') throw unauthorized('membership removed');
      // Their own row (active since the fast path, or re-invited after a removal), else an invitation of their email.
      const claimable = own ?? (await this.invitationFor(q, tenantId, claims));
      if (claimable) return q.activate(tenantId, claimable.id, profile);
      const cap = PLANS[plan].seats;
      if (cap !== null && (await q.countSeats(tenantId)) >= cap) throw seatsExceeded(plan, cap);
      return q.insert({
        id: newId(),
        tenant_id: tenantId,
        idp_subject: profile.sub,
        email: profile.email,
        given_name: profile.given_name,
        family_name: profile.family_name,
        role: claims.role,
        status: 'active',
        invited_by: null,
        last_seen_at: new Date(),
      });
    });
    if (!row) throw unauthorized('unknown tenant');
    return { userId: row.id, role: row.role, plan: seen.plan };
  }

  /** The pending invitation a first sign-in claims: its email, unless the IdP says that email is unverified. */
  private async invitationFor(q: MemberQueries, tenantId: string, claims: SessionClaims): Promise<MemberRow | undefined> {
    if (!claims.email || claims.email_verified === false) return undefined;
    const [invitation] = await q.findByEmail(tenantId, claims.email, ['invited']);
    return invitation;
  }

  /** Active and invited members: the seats the plan counts. */
  async seats(tenantId: string): Promise<number> {
    return this.repo.countSeats(tenantId);
  }

  async get(tenantId: string, id: string): Promise<Member> {
    const row = await this.repo.find(tenantId, id);
    if (!row || row.status === 'removed') throw notFound('member');
    return toMember(row);
  }

  async list(tenantId: string, query: ListMembersQuery) {
    const after = query.cursor ? decodeCursor(query.cursor, listCursor).id : null;
    const page = toPage(await this.repo.list(tenantId, after, query.limit), query.limit, (last) => ({ id: last.id }));
    return { items: page.items.map(toMember), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  /** A pending member holding a seat; a removed member's row is revived so their IdP subject finds it again. */
  async invite(auth: AuthContext, body: InviteMember): Promise<Member> {
    const row = await this.repo.withTenantLock(auth.tenantId, async (q, plan) => {
      const [present] = await q.findByEmail(auth.tenantId, body.email, ['active', 'invited']);
      if (present) throw conflict('member.already_exists', `${present.status === 'invited' ? 'an invitation' : 'a member'} with this email already exists`);
      const cap = PLANS[plan].seats;
      if (cap !== null && (await q.countSeats(auth.tenantId)) >= cap) throw seatsExceeded(plan, cap);
      const [removed] = await q.findByEmail(auth.tenantId, body.email, ['removed']);
      if (removed) return q.revive(auth.tenantId, removed.id, body.email, body.role, auth.userId);
      return q.insert({
        id: newId(),
        tenant_id: auth.tenantId,
        idp_subject: null,
        email: body.email,
        given_name: null,
        family_name: null,
        role: body.role,
        status: 'invited',
        invited_by: auth.userId,
        last_seen_at: null,
      });
    });
    if (!row) throw notFound('tenant');
    return toMember(row);
  }

  /** Takes effect on the member's next request here, and within 30 s (the session cache) on every replica. */
  async updateRole(tenantId: string, id: string, role: Role): Promise<Member> {
    const row = await this.repo.withTenantLock(tenantId, async (q) => {
      const current = await this.present(q, tenantId, id);
      if (current.role === role) return current;
      await this.keepAnOwner(q, tenantId, current);
      return q.setRole(tenantId, id, role);
    });
    if (!row) throw notFound('member');
    this.sessions.forgetUser(id);
    return toMember(row);
  }

  /**
   * Marks the member removed (the row stays) and answers them as they were; their sessions are
   * refused here at once and within 30 s (the session cache) on every replica.
   */
  async remove(tenantId: string, id: string): Promise<Member> {
    const row = await this.repo.withTenantLock(tenantId, async (q) => {
      const current = await this.present(q, tenantId, id);
      await this.keepAnOwner(q, tenantId, current);
      await q.markRemoved(tenantId, id);
      return current;
    });
    if (!row) throw notFound('member');
    this.sessions.forgetUser(id);
    return toMember(row);
  }

  private async present(q: MemberQueries, tenantId: string, id: string): Promise<MemberRow> {
    const row = await q.find(tenantId, id);
    if (!row || row.status === 'removed') throw notFound('member');
    return row;
  }

  /**
   * Refuses to take away the tenant's last active owner. The owner rows stay locked until the
   * transaction ends, so two concurrent demotions of the only two owners cannot both pass.
   */
  private async keepAnOwner(q: MemberQueries, tenantId: string, member: MemberRow): Promise<void> {
    if (member.role !== 'owner' || member.status !== 'active') return;
    const owners = await q.lockActiveOwners(tenantId);
    if (owners.filter((id) => id !== member.id).length === 0) throw lastOwner();
  }
}

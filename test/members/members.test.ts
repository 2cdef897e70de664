import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { member, memberList } from '../../src/modules/members/schemas.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext } from '../helpers/app.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

type Headers = Record<string, string>;
type Role = 'owner' | 'member' | 'viewer';

const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Headers, payload?: object) =>
  ctx.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

/** A session of one person: `sub` names them, `role` is only their token's claim. */
const person = async (tenantId: string, sub: string, role: Role = 'member', email = `${sub}@example.test`) =>
  bearer(await sessionToken(tenantId, role, { sub, email }));

const membersOf = async (who: Headers) => {
  const res = await call('GET', '/v1/members', who);
  expect(res.statusCode, res.body).toBe(200);
  return memberList.parse(res.json()).items;
};
const me = async (who: Headers) => call('GET', '/v1/me', who);
const invite = (who: Headers, email: string, role: Role = 'member') => call('POST', '/v1/members', who, { email, role });
const setRole = (who: Headers, id: string, role: Role) => call('PATCH', `/v1/members/${id}`, who, { role });
const idOf = async (who: Headers): Promise<string> => (await me(who)).json().user.id;

describe('seats', () => {
  it('caps Starter at 3 active and invited members, for invitations and first sign-ins alike', async () => {
    const t = await createTenant(ctx.app, 'starter');
    const olga = await person(t.tenantId, 'olga', 'owner');
    expect((await membersOf(olga)).map((m) => [m.email, m.role, m.status])).toEqual([['olga@example.test', 'owner', 'active']]);

    const ann = await invite(olga, 'ann@example.test', 'member');
    expect(ann.statusCode, ann.body).toBe(201);
    const annMember = member.parse(ann.json());
    expect(annMember).toMatchObject({ email: 'ann@example.test', role: 'member', status: 'invited', invited_by: await idOf(olga), last_seen_at: null });
    const ben = member.parse((await invite(olga, 'ben@example.test', 'viewer')).json());

    const fourth = await invite(olga, 'cy@example.test');
    expect(fourth.statusCode).toBe(402);
    expect(fourth.json()).toMatchObject({ code: 'seats_quota_exceeded', required_plan: 'pro', error: expect.any(String) });
    // A first sign-in without an invitation needs a seat too.
    const stranger = await me(await person(t.tenantId, 'zed', 'owner'));
    expect(stranger.statusCode).toBe(402);
    expect(stranger.json()).toMatchObject({ code: 'seats_quota_exceeded', required_plan: 'pro' });
    // An invited person's seat is already theirs: claiming it at the cap is fine.
    expect((await me(await person(t.tenantId, 'ann-sub', 'member', 'ann@example.test'))).statusCode).toBe(200);
    const billing = await call('GET', '/v1/billing', olga);
    expect(billing.json().usage.seats).toEqual({ used: 3, limit: 3 });

    expect((await call('DELETE', `/v1/members/${ben.id}`, olga)).statusCode).toBe(204);
    expect((await call('GET', '/v1/billing', olga)).json().usage.seats.used).toBe(2);
    expect((await invite(olga, 'cy@example.test')).statusCode).toBe(201);
    expect((await membersOf(olga)).map((m) => [m.email, m.status])).toEqual([
      ['olga@example.test', 'active'],
      ['ann@example.test', 'active'],
      ['cy@example.test', 'invited'],
    ]);
    expect(annMember.id).toBe((await membersOf(olga))[1]!.id);
  });

  it('holds the cap under concurrent invitations and first sign-ins', async () => {
    const t = await createTenant(ctx.app, 'starter');
    const olga = await person(t.tenantId, 'olga', 'owner');
    await idOf(olga);
    const strangers = await Promise.all(['s1', 's2', 's3'].map((sub) => person(t.tenantId, sub, 'viewer')));
    const results = await Promise.all([
      ...['i1', 'i2', 'i3'].map((name) => invite(olga, `${name}@example.test`)),
      ...strangers.map((s) => me(s)),
    ]);
    const ok = results.filter((r) => r.statusCode === 200 || r.statusCode === 201);
    const refused = results.filter((r) => r.statusCode === 402);
    expect(ok).toHaveLength(2);
    expect(refused).toHaveLength(4);
    expect(refused.every((r) => r.json().code === 'seats_quota_exceeded')).toBe(true);
    expect(await membersOf(olga)).toHaveLength(3);
  });

  it('refuses a second invitation of the same email, or of a member, whatever its case', async () => {
    const t = await createTenant(ctx.app, 'pro');
    const olga = await person(t.tenantId, 'olga', 'owner');
    expect((await invite(olga, 'Dup@Example.test')).statusCode).toBe(201);
    for (const email of ['dup@example.test', 'DUP@EXAMPLE.TEST', 'OLGA@example.test']) {
      const res = await invite(olga, email);
      expect(res.statusCode, email).toBe(409);
      expect(res.json().code).toBe('member.already_exists');
    }
    expect((await invite(olga, 'not an email')).statusCode).toBe(400);
    expect((await call('POST', '/v1/members', olga, { email: 'x@example.test', role: 'admin' })).statusCode).toBe(400);
  });

  it('has no cap on Enterprise, and pages through the members', async () => {
    const t = await createTenant(ctx.app, 'enterprise');
    const olga = await person(t.tenantId, 'olga', 'owner');
    for (let i = 0; i < 12; i++) expect((await invite(olga, `p${i}@example.test`)).statusCode).toBe(201);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await call('GET', `/v1/members?limit=5${cursor ? `&cursor=${cursor}` : ''}`, olga);
      const page = memberList.parse(res.json());
      seen.push(...page.items.map((m) => m.email!));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['olga@example.test', ...Array.from({ length: 12 }, (_, i) => `p${i}@example.test`)]);
    expect((await call('GET', '/v1/members?cursor=bogus', olga)).json().code).toBe('invalid_cursor');
  });
});

describe('roles', () => {
  it('gives a claimed invitation its invited role, not the claim', async () => {
    const t = await createTenant(ctx.app);
    const olga = await person(t.tenantId, 'olga', 'owner');
    const invited = member.parse((await invite(olga, 'dana@example.test', 'viewer')).json());

    const dana = bearer(await sessionToken(t.tenantId, 'owner', { sub: 'idp|dana', email: 'DANA@example.test' }));
    const signedIn = await me(dana);
    expect(signedIn.statusCode).toBe(200);
    expect(signedIn.json().user).toMatchObject({ id: invited.id, role: 'viewer', first_name: 'Test', last_name: 'owner' });
    const listed = (await membersOf(olga)).find((m) => m.id === invited.id)!;
    expect(listed).toMatchObject({ status: 'active', role: 'viewer', invited_by: await idOf(olga) });
    expect(listed.last_seen_at).not.toBeNull();
    expect((await invite(dana, 'x@example.test')).statusCode).toBe(403);
  });

  it('keeps the stored role over later claims; a PATCH takes effect on the next request', async () => {
    const t = await createTenant(ctx.app);
    const olga = await person(t.tenantId, 'olga', 'owner');
    // First seen without an invitation: the claim decides, once.
    const max = await person(t.tenantId, 'max', 'viewer');
    const maxId = await idOf(max);
    expect((await me(max)).json().user.role).toBe('viewer');
    const maxClaimingOwner = await person(t.tenantId, 'max', 'owner');
    expect((await me(maxClaimingOwner)).json().user.role).toBe('viewer');
    expect((await invite(maxClaimingOwner, 'y@example.test')).statusCode).toBe(403);

    const promoted = await setRole(olga, maxId, 'owner');
    expect(promoted.statusCode, promoted.body).toBe(200);
    expect(member.parse(promoted.json())).toMatchObject({ id: maxId, role: 'owner', status: 'active' });
    // Both of max's tokens were cached as viewer; the change reaches them at once on this replica.
    expect((await me(max)).json().user.role).toBe('owner');
    expect((await invite(maxClaimingOwner, 'y@example.test')).statusCode).toBe(201);

    expect((await setRole(olga, maxId, 'member')).statusCode).toBe(200);
    const refused = await invite(max, 'z@example.test');
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('role_forbidden');
    // A fresh token claiming owner does not change it either.
    expect((await me(await person(t.tenantId, 'max', 'owner'))).json().user.role).toBe('member');
  });

  it('lets an owner change the role of a pending invitation', async () => {
    const t = await createTenant(ctx.app);
    const olga = await person(t.tenantId, 'olga', 'owner');
    const invited = member.parse((await invite(olga, 'ivy@example.test', 'viewer')).json());
    const patched = await setRole(olga, invited.id, 'owner');
    expect(patched.json()).toMatchObject({ role: 'owner', status: 'invited' });
    expect((await me(await person(t.tenantId, 'ivy', 'viewer'))).json().user.role).toBe('owner');
  });
});

describe('the last owner', () => {
  it('can be neither demoted nor removed; with two owners one can go', async () => {
    const t = await createTenant(ctx.app);
    const olga = await person(t.tenantId, 'olga', 'owner');
    const olgaId = await idOf(olga);
    for (const res of [await setRole(olga, olgaId, 'member'), await setRole(olga, olgaId, 'viewer'), await call('DELETE', `/v1/members/${olgaId}`, olga)]) {
      expect(res.statusCode).toBe(409);
      expect(res.json().code).toBe('member.last_owner');
    }
    // An invited owner is no owner yet.
    const invitedOwner = member.parse((await invite(olga, 'io@example.test', 'owner')).json());
    expect((await setRole(olga, olgaId, 'member')).statusCode).toBe(409);
    expect((await call('DELETE', `/v1/members/${invitedOwner.id}`, olga)).statusCode).toBe(204);

    const paul = await person(t.tenantId, 'paul', 'member');
    const paulId = await idOf(paul);
    expect((await setRole(olga, paulId, 'owner')).statusCode).toBe(200);
    expect((await setRole(olga, olgaId, 'member')).statusCode).toBe(200);
    expect((await me(olga)).json().user.role).toBe('member');
    const removeLast = await call('DELETE', `/v1/members/${paulId}`, paul);
    expect(removeLast.statusCode).toBe(409);
    expect(removeLast.json().code).toBe('member.last_owner');
    expect((await setRole(paul, paulId, 'owner')).statusCode).toBe(200); // no change is no demotion
  });

  it('survives two concurrent demotions of the only two owners: exactly one succeeds', async () => {
    for (let round = 0; round < 5; round++) {
      const t = await createTenant(ctx.app);
      const a = await person(t.tenantId, 'a', 'owner');
      const b = await person(t.tenantId, 'b', 'owner');
      const [aId, bId] = [await idOf(a), await idOf(b)];
      const results = await Promise.all([setRole(a, bId, 'member'), setRole(b, aId, 'member')]);
      expect(results.map((r) => r.statusCode).sort(), `round ${round}`).toEqual([200, 409]);
      expect(results.find((r) => r.statusCode === 409)!.json().code).toBe('member.last_owner');
      const owners = (await membersOf(a)).filter((m) => m.role === 'owner');
      expect(owners).toHaveLength(1);
    }
  });
});

describe('removal', () => {
  it('refuses the removed member at once, does not re-provision them, and a re-invitation revives their row', async () => {
    const t = await createTenant(ctx.app, 'starter');
    const olga = await person(t.tenantId, 'olga', 'owner');
    const rita = await person(t.tenantId, 'rita', 'member');
    const ritaId = await idOf(rita);
    expect((await call('DELETE', `/v1/members/${ritaId}`, olga)).statusCode).toBe(204);

    const refused = await me(rita);
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toMatchObject({ code: 'unauthorized', error: 'membership removed' });
    expect((await me(await person(t.tenantId, 'rita', 'owner'))).statusCode).toBe(401); // a fresh token too
    expect((await membersOf(olga)).map((m) => m.id)).not.toContain(ritaId);
    expect((await call('DELETE', `/v1/members/${ritaId}`, olga)).statusCode).toBe(404);
    expect((await setRole(olga, ritaId, 'owner')).statusCode).toBe(404);

    const again = await invite(olga, 'RITA@example.test', 'viewer');
    expect(again.statusCode, again.body).toBe(201);
    expect(again.json()).toMatchObject({ id: ritaId, status: 'invited', role: 'viewer' });
    const back = await me(rita);
    expect(back.statusCode).toBe(200);
    expect(back.json().user).toMatchObject({ id: ritaId, role: 'viewer' });
  });
});

describe('access', () => {
  it('lets only owner sessions change members, every session read them, and no API key', async () => {
    const t = await createTenant(ctx.app);
    const olga = await person(t.tenantId, 'olga', 'owner');
    const mia = await person(t.tenantId, 'mia', 'member');
    const vic = await person(t.tenantId, 'vic', 'viewer');
    // People become members at their first request.
    const [, miaId] = [await idOf(olga), await idOf(mia), await idOf(vic)];
    for (const who of [mia, vic]) {
      expect((await membersOf(who)).length).toBe(3);
      for (const res of [await invite(who, 'n@example.test'), await setRole(who, miaId, 'viewer'), await call('DELETE', `/v1/members/${miaId}`, who)]) {
        expect(res.statusCode).toBe(403);
        expect(res.json().code).toBe('role_forbidden');
      }
    }
    for (const res of [await call('GET', '/v1/members', t.auth), await invite(t.auth, 'n@example.test'), await setRole(t.auth, miaId, 'viewer')]) {
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('session_required');
    }
  });

  it("answers 404 for another tenant's member and lists only the caller's tenant", async () => {
    const [t, other] = [await createTenant(ctx.app), await createTenant(ctx.app)];
    const olga = await person(t.tenantId, 'olga', 'owner');
    const mia = await person(t.tenantId, 'mia', 'member');
    const miaId = await idOf(mia);
    const otherOwner = await person(other.tenantId, 'olga', 'owner');
    expect((await setRole(otherOwner, miaId, 'owner')).statusCode).toBe(404);
    expect((await call('DELETE', `/v1/members/${miaId}`, otherOwner)).statusCode).toBe(404);
    expect((await membersOf(otherOwner)).map((m) => m.id)).toEqual([await idOf(otherOwner)]);
    expect((await membersOf(olga)).map((m) => m.id)).toContain(miaId);
    // The same IdP subject in another tenant is another member.
    expect(await idOf(otherOwner)).not.toBe(await idOf(olga));
  });

  it('records invitations, role changes and removals in the audit chain without the email', async () => {
    const t = await createTenant(ctx.app);
    const olga = await person(t.tenantId, 'olga', 'owner');
    const invited = member.parse((await invite(olga, 'audit-me@example.test', 'viewer')).json());
    await setRole(olga, invited.id, 'member');
    await call('DELETE', `/v1/members/${invited.id}`, olga);
    const rows = await ctx.stores.sql<{ action: string; resource_id: string; details: unknown }[]>`
      select action, resource_id, details from audit_log where tenant_id = ${t.tenantId} and resource_type = 'member' order by seq`;
    expect(rows.map((r) => [r.action, r.resource_id, r.details])).toEqual([
      ['member.invite', invited.id, { role: 'viewer' }],
      ['member.update', invited.id, { role: 'member' }],
      ['member.remove', invited.id, { role: 'member' }],
    ]);
  });
});

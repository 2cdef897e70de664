import { execFileSync } from 'node:child_process';
import { createPublicKey, randomUUID, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { auditCommand } from '../../src/cli/audit.js';
import { UsageError } from '../../src/cli/args.js';
import { auditAnchorView, publicKeyView } from '../../src/modules/audit/schemas.js';
import { AuditAnchorService } from '../../src/platform/audit/anchor.js';
import { anchorObjectKey, LocalAnchorStorage } from '../../src/platform/audit/anchor-storage.js';
import { canonicalJson, GENESIS_HASH } from '../../src/platform/audit/chain.js';
import { S3AnchorStorage } from '../../src/platform/audit/s3-anchor-storage.js';
import { SigningKeyStore } from '../../src/platform/audit/signing.js';
import { sha256, sha256Hex } from '../../src/platform/crypto.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';

let ctx: TestContext;
let anchorDir: string;
beforeAll(async () => {
  anchorDir = mkdtempSync(path.join(tmpdir(), 'looptrace-anchors-'));
  ctx = await startApp({ AUDIT_ANCHOR_DIR: anchorDir });
});
afterAll(async () => ctx?.close());

const today = () => new Date().toISOString().slice(0, 10);
const anchors = () => ctx.app.services.auditAnchors;

async function tenantWithChain(rows: number): Promise<{ t: TestTenant; head: string }> {
  const t = await createTenant(ctx.app);
  for (let i = 0; i < rows; i++) {
    const res = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: `p${i}` } });
    expect(res.statusCode).toBe(201);
  }
  const log = (await ctx.app.inject({ method: 'GET', url: '/v1/audit-log?limit=1', headers: t.auth })).json();
  return { t, head: log.entries[0]?.hash ?? GENESIS_HASH };
}

async function publicVerify(query: string) {
  return ctx.app.inject({ method: 'GET', url: `/v1/audit/verify?${query}` });
}

const anchorFile = (tenantId: string, date: string) => path.join(anchorDir, tenantId, `${date}.json`);

describe('daily audit anchors', () => {
  it('anchors a day; the public endpoint verifies it; the signature verifies with node:crypto and openssl', async () => {
    const { t, head } = await tenantWithChain(3);
    const date = today();
    const anchor = await anchors().anchor(t.tenantId, date);
    expect(anchor).toMatchObject({ tenant_id: t.tenantId, date, head_hash: head, row_count: 3, s3_key: `audit-anchors/${t.tenantId}/${date}.json` });

    const res = await publicVerify(`tenant_id=${t.tenantId}&date=${date}`); // no Authorization header at all
    expect(res.statusCode).toBe(200);
    const body = auditAnchorView.parse(res.json());
    expect(body).toEqual({
      verified: true,
      date,
      head_hash: head,
      row_count: 3,
      s3_key: anchor.s3_key,
      anchored_at: anchor.anchored_at.toISOString(),
      signature: anchor.signature,
      key_id: anchor.key_id,
    });
    expect('hash_matches' in body).toBe(false);
    expect((await publicVerify(`tenant_id=${t.tenantId}&date=${date}&expected_head_hash=${head}`)).json().hash_matches).toBe(true);
    expect((await publicVerify(`tenant_id=${t.tenantId}&date=${date}&expected_head_hash=${head.toUpperCase()}`)).json().hash_matches).toBe(true);
    const wrong = (await publicVerify(`tenant_id=${t.tenantId}&date=${date}&expected_head_hash=${'ab'.repeat(32)}`)).json();
    expect(wrong).toMatchObject({ verified: true, hash_matches: false, head_hash: head });

    const published = publicKeyView.parse((await ctx.app.inject({ method: 'GET', url: '/audit/public-key' })).json());
    const publicKey = createPublicKey(published.public_key_pem);
    expect(published.key_id).toBe(sha256Hex(publicKey.export({ type: 'spki', format: 'der' })).slice(0, 16));
    expect(published.key_id).toBe(anchor.key_id);

    const manifestPath = anchorFile(t.tenantId, date);
    const manifest = readFileSync(manifestPath);
    expect(manifest.toString('utf8')).toBe(
      `{"anchored_at":"${body.anchored_at}","date":"${date}","head_hash":"${head}","row_count":3,"tenant_id":"${t.tenantId}"}`,
    );
    const signature = readFileSync(`${manifestPath}.sig`);
    expect(signature).toHaveLength(64);
    expect(signature.toString('base64')).toBe(body.signature);
    expect(verify(null, manifest, publicKey, signature)).toBe(true);
    const tampered = Buffer.from(manifest.toString('utf8').replace('"row_count":3', '"row_count":2'));
    expect(verify(null, tampered, publicKey, signature)).toBe(false);

    // The exact commands of docs/operations.md.
    const work = mkdtempSync(path.join(tmpdir(), 'looptrace-openssl-'));
    writeFileSync(path.join(work, 'pub.pem'), published.public_key_pem);
    writeFileSync(path.join(work, 'tampered.json'), tampered);
    const openssl = (input: string) =>
      execFileSync('openssl', ['pkeyutl', '-verify', '-pubin', '-inkey', path.join(work, 'pub.pem'), '-rawin', '-in', input, '-sigfile', `${manifestPath}.sig`], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    expect(openssl(manifestPath)).toContain('Signature Verified Successfully');
    expect(() => openssl(path.join(work, 'tampered.json'))).toThrow();
  });

  it('is idempotent and never rewrites a stored anchor', async () => {
    const { t, head } = await tenantWithChain(2);
    const date = today();
    const first = await anchors().anchor(t.tenantId, date);
    const file = anchorFile(t.tenantId, date);
    const bytes = readFileSync(file);
    const mtime = statSync(file).mtimeMs;
    expect(statSync(file).mode & 0o777).toBe(0o444);
    expect(statSync(`${file}.sig`).mode & 0o777).toBe(0o444);

    await tenantWithChainGrow(t, 1); // the chain moves on; the day's anchor must not
    const again = await anchors().anchor(t.tenantId, date);
    expect(again).toEqual(first);
    expect(again).toMatchObject({ head_hash: head, row_count: 2 });
    expect(readFileSync(file).equals(bytes)).toBe(true);
    expect(statSync(file).mtimeMs).toBe(mtime);

    const storage = new LocalAnchorStorage(anchorDir);
    expect(await storage.writeOnce(anchorObjectKey(t.tenantId, date), Buffer.from('{"forged":true}'))).toBe('exists');
    expect(readFileSync(file).equals(bytes)).toBe(true);
    expect(() => writeFileSync(file, 'x', { flag: 'wx' })).toThrow(/EEXIST/);
    const rows = await ctx.stores.sql`select 1 from audit_anchors where tenant_id = ${t.tenantId}`;
    expect(rows).toHaveLength(1);
  });

  it("the daily run makes up the days a missed run did not anchor, and rewrites none it did", async () => {
    const { t } = await tenantWithChain(1);
    await ctx.stores.sql`update tenants set created_at = now() - interval '3 days' where id = ${t.tenantId}`;
    const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
    const before = await anchors().anchor(t.tenantId, day(2)); // the run two days ago happened; the others were missed
    const runs = await anchors().anchorRecentDaysForAllTenants(new Date(), 7);
    expect(runs.map((r) => r.date)).toEqual([7, 6, 5, 4, 3, 2, 1].map(day));
    const mine = runs.flatMap((r) => r.anchors.filter((a) => a.tenant_id === t.tenantId).map((a) => a.date));
    // Anchored for every day that had ended since the tenant existed by its end, and nothing earlier.
    expect(mine).toEqual([3, 2, 1].map(day));
    const [again] = await ctx.stores.sql<{ anchored_at: Date }[]>`
      select anchored_at from audit_anchors where tenant_id = ${t.tenantId} and date = ${day(2)}`;
    expect(again!.anchored_at.toISOString()).toBe(before.anchored_at.toISOString());
  });

  it('lets racing anchorers of one day agree on a single anchor', async () => {
    const { t } = await tenantWithChain(1);
    const results = await Promise.all(Array.from({ length: 6 }, () => anchors().anchor(t.tenantId, today())));
    expect(new Set(results.map((r) => r.anchored_at.toISOString())).size).toBe(1);
    expect(new Set(results.map((r) => r.signature)).size).toBe(1);
  });

  it('seals the head as of the end of the UTC day, and refuses days that do not exist or have not begun', async () => {
    const { t } = await tenantWithChain(2);
    const past = await anchors().anchor(t.tenantId, '2021-03-04');
    expect(past).toMatchObject({ head_hash: GENESIS_HASH, row_count: 0 });
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    await expect(anchors().anchor(t.tenantId, tomorrow)).rejects.toMatchObject({ status: 400, code: 'invalid_date' });
    await expect(anchors().anchor(t.tenantId, '2025-02-30')).rejects.toMatchObject({ status: 400, code: 'invalid_date' });
    await expect(anchors().anchor(randomUUID(), '2021-03-04')).rejects.toMatchObject({ status: 404 });
  });

  it('answers an unanchored day with verified false, and bad parameters with 400', async () => {
    const { t } = await tenantWithChain(1);
    const none = await publicVerify(`tenant_id=${t.tenantId}&date=2020-01-01&expected_head_hash=${GENESIS_HASH}`);
    expect(none.statusCode).toBe(200);
    expect(none.json()).toEqual({
      verified: false,
      date: '2020-01-01',
      head_hash: null,
      row_count: null,
      s3_key: null,
      anchored_at: null,
      hash_matches: false,
      signature: null,
      key_id: null,
    });
    for (const query of [
      `date=2020-01-01`,
      `tenant_id=${t.tenantId}`,
      `tenant_id=not-a-uuid&date=2020-01-01`,
      `tenant_id=${t.tenantId}&date=2020-13-01`,
      `tenant_id=${t.tenantId}&date=2025-02-30`,
      `tenant_id=${t.tenantId}&date=2020-01-01&expected_head_hash=abc`,
    ]) {
      const res = await publicVerify(query);
      expect(res.statusCode, query).toBe(400);
      expect(res.json(), query).toMatchObject({ code: 'bad_request', request_id: res.headers['x-request-id'] });
      expect(typeof res.json().error).toBe('string');
    }
    // Formatted like every other validation error: field paths, not schema paths.
    const missingTenant = (await publicVerify('date=2020-01-01')).json();
    expect(missingTenant.error).toMatch(/^query\.tenant_id: /);
    expect(missingTenant.details).toEqual([expect.objectContaining({ path: 'query.tenant_id' })]);
  });

  it('adopts what a crashed earlier run stored for the same head, and refuses anything else', async () => {
    const { t } = await tenantWithChain(1);
    const storage = new LocalAnchorStorage(anchorDir);
    const crashed = canonicalJson({ anchored_at: '2022-05-06T00:15:00.000Z', date: '2022-05-05', head_hash: GENESIS_HASH, row_count: 0, tenant_id: t.tenantId });
    await storage.writeOnce(anchorObjectKey(t.tenantId, '2022-05-05'), Buffer.from(crashed)); // no .sig: it died here
    const adopted = await anchors().anchor(t.tenantId, '2022-05-05');
    expect(adopted.anchored_at.toISOString()).toBe('2022-05-06T00:15:00.000Z');
    const key = await anchors().signingKey();
    expect(key.verify(Buffer.from(crashed), readFileSync(`${anchorFile(t.tenantId, '2022-05-05')}.sig`))).toBe(true);

    const foreign = canonicalJson({ anchored_at: '2022-05-08T00:15:00.000Z', date: '2022-05-07', head_hash: 'f'.repeat(64), row_count: 9, tenant_id: t.tenantId });
    await storage.writeOnce(anchorObjectKey(t.tenantId, '2022-05-07'), Buffer.from(foreign));
    await expect(anchors().anchor(t.tenantId, '2022-05-07')).rejects.toMatchObject({ status: 409, code: 'anchor_conflict' });
    expect(readFileSync(anchorFile(t.tenantId, '2022-05-07'), 'utf8')).toBe(foreign);
    expect((await publicVerify(`tenant_id=${t.tenantId}&date=2022-05-07`)).json().verified).toBe(false);
  });

  it('creates one signing key even when replicas race, sealed with the secret key', async () => {
    const purpose = `test-${randomUUID()}`;
    const secret = ctx.stores.config.secretKey;
    try {
      const keys = await Promise.all(Array.from({ length: 4 }, () => new SigningKeyStore(ctx.stores.sql, secret, purpose).get()));
      expect(new Set(keys.map((k) => k.keyId)).size).toBe(1);
      const [stored] = await ctx.stores.sql<{ private_key_enc: string }[]>`select private_key_enc from signing_keys where purpose = ${purpose}`;
      expect(stored!.private_key_enc).not.toContain('PRIVATE KEY');
      const signature = keys[0]!.sign(Buffer.from('hello'));
      expect(keys[3]!.verify(Buffer.from('hello'), signature)).toBe(true);
      await expect(new SigningKeyStore(ctx.stores.sql, Buffer.alloc(32, 7), purpose).get()).rejects.toThrow(/LOOPTRACE_SECRET_KEY/);
    } finally {
      await ctx.stores.sql`delete from signing_keys where purpose = ${purpose}`;
    }
  });

  it('runs from the CLI: audit anchor prints the anchors, audit verify exits 1 on a broken chain', async () => {
    const { t, head } = await tenantWithChain(2);
    const printed: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    });
    try {
      const cli = { services: ctx.app.services, stores: ctx.stores };
      expect(await auditCommand(['anchor', '--date', today(), '--tenant', t.tenantId], cli)).toBe(0);
      const anchored = JSON.parse(printed.pop()!);
      expect(anchored).toMatchObject({ date: today(), failures: [], anchors: [{ tenant_id: t.tenantId, verified: true, head_hash: head, row_count: 2 }] });
      expect(await auditCommand(['verify', '--tenant', t.tenantId], cli)).toBe(0);
      expect(JSON.parse(printed.pop()!)).toMatchObject({ valid: true, rows_checked: 2, head_hash: head });
      await ctx.stores.sql`update audit_log set details = '{"name":"evil"}' where tenant_id = ${t.tenantId} and seq = 1`;
      expect(await auditCommand(['verify', '--tenant', t.tenantId], cli)).toBe(1);
      expect(JSON.parse(printed.pop()!)).toMatchObject({ valid: false, broken_at_seq: 1 });
      await expect(auditCommand(['anchor', '--date', '2024-02-30'], cli)).rejects.toBeInstanceOf(UsageError);
      await expect(auditCommand(['anchor'], cli)).rejects.toBeInstanceOf(UsageError);
    } finally {
      spy.mockRestore();
    }
  });
});

async function tenantWithChainGrow(t: TestTenant, rows: number): Promise<void> {
  for (let i = 0; i < rows; i++) {
    await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: `more${i}` } });
  }
}

/**
 * A local stand-in for S3: enough of PutObject (honouring If-None-Match) and GetObject to check
 * what the SDK sends. It cannot prove Object Lock is enforced; only real S3 can.
 */
function startS3StandIn(): Promise<{ server: Server; endpoint: string; objects: Map<string, Buffer>; puts: { key: string; headers: IncomingHttpHeaders }[] }> {
  const objects = new Map<string, Buffer>();
  const puts: { key: string; headers: IncomingHttpHeaders }[] = [];
  const xmlError = (code: string) => `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const key = decodeURIComponent(new URL(req.url!, 'http://s3').pathname);
      if (req.method === 'PUT') {
        puts.push({ key, headers: req.headers });
        if (req.headers['if-none-match'] === '*' && objects.has(key)) {
          res.writeHead(412, { 'content-type': 'application/xml' }).end(xmlError('PreconditionFailed'));
          return;
        }
        objects.set(key, Buffer.concat(chunks));
        res.writeHead(200, { etag: '"1"' }).end();
        return;
      }
      const found = objects.get(key);
      if (!found) res.writeHead(404, { 'content-type': 'application/xml' }).end(xmlError('NoSuchKey'));
      else res.writeHead(200, { 'content-length': found.length }).end(found);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, objects, puts }),
    ),
  );
}

describe('S3 anchor storage (local stand-in, not real S3)', () => {
  it('writes each object once with COMPLIANCE Object Lock, If-None-Match and a SHA-256 checksum', async () => {
    const s3 = await startS3StandIn();
    try {
      const storage = new S3AnchorStorage(
        { bucket: 'anchors', region: 'us-east-1', endpoint: s3.endpoint, retentionDays: 30 },
        { credentials: { accessKeyId: 'stand-in', secretAccessKey: 'stand-in' } },
      );
      const { t, head } = await tenantWithChain(1);
      const service = new AuditAnchorService(ctx.stores.sql, new SigningKeyStore(ctx.stores.sql, ctx.stores.config.secretKey), storage);
      const before = Date.now();
      const anchor = await service.anchor(t.tenantId, today());
      expect(anchor).toMatchObject({ head_hash: head, row_count: 1 });
      const manifest = s3.objects.get(`/anchors/${anchor.s3_key}`)!;
      expect(JSON.parse(manifest.toString('utf8'))).toMatchObject({ head_hash: head, tenant_id: t.tenantId });
      expect(s3.objects.get(`/anchors/${anchor.s3_key}.sig`)!.toString('base64')).toBe(anchor.signature);

      expect(s3.puts).toHaveLength(2);
      for (const { key, headers } of s3.puts) {
        expect(headers['x-amz-object-lock-mode']).toBe('COMPLIANCE');
        expect(headers['if-none-match']).toBe('*');
        expect(headers['x-amz-checksum-sha256']).toBe(sha256(s3.objects.get(key)!).toString('base64'));
        const retainUntil = Date.parse(String(headers['x-amz-object-lock-retain-until-date']));
        expect(retainUntil).toBeGreaterThanOrEqual(before + 30 * 86_400_000 - 1_000);
        expect(retainUntil).toBeLessThan(Date.now() + 30 * 86_400_000 + 1_000);
      }
      expect(await storage.writeOnce(anchor.s3_key, Buffer.from('forged'))).toBe('exists');
      expect(s3.objects.get(`/anchors/${anchor.s3_key}`)!.equals(manifest)).toBe(true);
      expect(await storage.read(`${anchor.s3_key}.missing`)).toBeNull();
    } finally {
      s3.server.close();
    }
  });
});

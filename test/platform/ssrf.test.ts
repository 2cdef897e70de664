import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkOutboundUrl,
  guardedDispatcher,
  guardedFetch,
  ResponseTooLargeError,
  unsafeCause,
  UnsafeUrlError,
  type GuardOptions,
  type HostResolver,
} from '../../src/platform/ssrf.js';

async function refusal(promise: Promise<unknown>): Promise<UnsafeUrlError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UnsafeUrlError);
  return err as UnsafeUrlError;
}

const open: GuardOptions = { requireHttps: false };

describe('checkOutboundUrl', () => {
  const nonPublic = [
    'http://127.0.0.1/',
    'http://127.1.2.3/',
    'http://0x7f.1/',
    'http://2130706433/',
    'http://0177.0.0.1/',
    'http://0x7f000001/',
    'http://017700000001/',
    'http://127.1/',
    'http://0xa.0.0.1/',
    'http://012.0.0.1/',
    'http://3232235777/',
    'http://[::ffff:7f00:1]/',
    'http://[0:0:0:0:0:ffff:169.254.169.254]/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:10.0.0.1]/',
    'http://10.0.0.1/',
    'http://172.16.5.4/',
    'http://192.168.1.1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[fe80::1]/',
    'http://100.64.0.1/',
    'http://[fc00::1]/',
    'http://[fd12:3456::1]/',
    'http://224.0.0.1/',
    'http://[ff02::1]/',
    'http://0.0.0.0/',
    'http://[::]/',
    'http://255.255.255.255/',
    'http://[64:ff9b::a00:1]/',
    'http://[2002:a00:1::]/',
  ];

  it.each(nonPublic)('refuses %s as private_ip', async (url) => {
    expect((await refusal(checkOutboundUrl(url, open))).reason).toBe('private_ip');
  });

  it('accepts public literals and reports the address to connect to', async () => {
    expect(await checkOutboundUrl('https://8.8.8.8/v1', { requireHttps: true })).toMatchObject({ address: '8.8.8.8', family: 4 });
    const v6 = await checkOutboundUrl('https://[2606:4700::1111]/', { requireHttps: true });
    expect(v6).toMatchObject({ address: '2606:4700::1111', family: 6 });
    expect(v6.url.pathname).toBe('/');
  });

  it('refuses a host name that resolves to loopback', async () => {
    expect((await refusal(checkOutboundUrl('http://localhost:8080/', open))).reason).toBe('private_ip');
  });

  it('allows loopback only with allowLoopback, and nothing else private', async () => {
    const loopback = { requireHttps: false, allowLoopback: true };
    expect(await checkOutboundUrl('http://localhost/', loopback)).toMatchObject({ address: '127.0.0.1', family: 4 });
    expect((await checkOutboundUrl('http://[::ffff:127.0.0.1]/', loopback)).address).toBe('::ffff:7f00:1');
    expect((await refusal(checkOutboundUrl('http://10.0.0.1/', loopback))).reason).toBe('private_ip');
    expect((await refusal(checkOutboundUrl('http://169.254.169.254/', loopback))).reason).toBe('private_ip');
  });

  it('allows every address with allowPrivate', async () => {
    expect((await checkOutboundUrl('http://10.0.0.1/', { requireHttps: false, allowPrivate: true })).address).toBe('10.0.0.1');
  });

  it('refuses http when https is required, and any other scheme', async () => {
    expect((await refusal(checkOutboundUrl('http://8.8.8.8/', { requireHttps: true }))).reason).toBe('not_https');
    expect((await refusal(checkOutboundUrl('ftp://8.8.8.8/', open))).reason).toBe('not_https');
    expect((await refusal(checkOutboundUrl('file:///etc/passwd', open))).reason).toBe('not_https');
  });

  it('refuses a host that does not resolve', async () => {
    expect((await refusal(checkOutboundUrl('https://nonexistent.invalid/', { requireHttps: true }))).reason).toBe('unresolvable');
  });
});

describe('guarded connections', () => {
  let server: Server;
  let base: string;
  const seen: string[] = [];
  // Per request to /slow: whether the client closed it before the answer came.
  const slowOutcomes: Promise<'answered' | 'abandoned'>[] = [];
  const loopback: GuardOptions = { requireHttps: false, allowLoopback: true };

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.url ?? '');
      if (req.url === '/redirect') {
        res.writeHead(302, { location: '/target' }).end();
      } else if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        // Streamed without a content-length: the reader itself must stop.
        for (let i = 0; i < 64; i++) res.write('x'.repeat(1024));
        res.end();
      } else if (req.url === '/slow') {
        slowOutcomes.push(new Promise((resolve) => res.on('close', () => resolve(res.writableFinished ? 'answered' : 'abandoned'))));
        setTimeout(() => res.writeHead(200).end('late'), 2_000).unref();
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, path: req.url }));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const init = (over: Partial<Parameters<typeof guardedFetch>[1]> = {}) => ({ timeoutMs: 2_000, maxBodyBytes: 1024, guard: loopback, ...over });

  it('fetches from an allowed address', async () => {
    const res = await guardedFetch(`${base}/ok`, init());
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, path: '/ok' });
  });

  it('refuses loopback without allowLoopback, before sending anything', async () => {
    const before = seen.length;
    expect((await refusal(guardedFetch(`${base}/ok`, init({ guard: open })))).reason).toBe('private_ip');
    expect(seen.length).toBe(before);
  });

  it('returns a redirect instead of following it', async () => {
    const res = await guardedFetch(`${base}/redirect`, init());
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/target');
    expect(seen).not.toContain('/target');
  });

  it('bounds the body it reads', async () => {
    const err = await guardedFetch(`${base}/big`, init({ maxBodyBytes: 4096 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    expect(err).toMatchObject({ status: 200, maxBytes: 4096 });
    const res = await guardedFetch(`${base}/big`, init({ maxBodyBytes: 64 * 1024 }));
    expect((await res.text()).length).toBe(64 * 1024);
  });

  it('bounds the time it waits', async () => {
    const err = await guardedFetch(`${base}/slow`, init({ timeoutMs: 150 })).catch((e: unknown) => e);
    // The deadline's own error (AbortSignal.timeout), not a late answer or another failure ...
    expect(err).toBeInstanceOf(DOMException);
    expect(err).toMatchObject({ name: 'TimeoutError', message: 'The operation was aborted due to timeout' });
    // ... and the one request it sent was closed before the server answered (2 s later).
    expect(seen.filter((url) => url === '/slow')).toHaveLength(1);
    expect(await slowOutcomes[0]).toBe('abandoned');
  });

  it('refuses a name that resolves to a private address after the check (DNS rebinding)', async () => {
    const port = new URL(base).port;
    // The first answer (the check) is public; every later one (the connect) points inside.
    let answers = 0;
    const rebinding: HostResolver = async () => [{ address: answers++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 }];
    const checked = await checkOutboundUrl(`http://rebind.example:${port}/ok`, { requireHttps: false, resolve: rebinding });
    expect(checked.address).toBe('93.184.216.34');
    const dispatcher = guardedDispatcher({ resolve: rebinding });
    const err = await undiciFetch(`http://rebind.example:${port}/ok`, { dispatcher }).catch((e: unknown) => e);
    expect(unsafeCause(err)?.reason).toBe('private_ip');
    expect(answers).toBe(2);
    await dispatcher.close();
  });

  it('checks again at connect time, for names and literals alike', async () => {
    const dispatcher = guardedDispatcher({});
    const port = new URL(base).port;
    for (const url of [`${base}/ok`, `http://localhost:${port}/ok`]) {
      const err = await undiciFetch(url, { dispatcher }).catch((e: unknown) => e);
      expect(unsafeCause(err)?.reason, url).toBe('private_ip');
    }
    const allowed = guardedDispatcher({ allowLoopback: true });
    const res = await undiciFetch(`http://localhost:${port}/ok`, { dispatcher: allowed });
    expect(res.status).toBe(200);
    await res.text();
    await Promise.all([dispatcher.close(), allowed.close()]);
  });
});

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';

/** A throw-away certificate authority and a server certificate it signed for localhost, 127.0.0.1 and ::1. */
export interface TestCa {
  /** The CA certificate's file: what NODE_EXTRA_CA_CERTS names. */
  caFile: string;
  caPem: string;
  certPem: string;
  keyPem: string;
}

export function makeTestCa(): TestCa {
  const dir = mkdtempSync(path.join(tmpdir(), 'looptrace-test-ca-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Looptrace Test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(file('server.ext'), [
    'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
    'basicConstraints=CA:FALSE',
    'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=serverAuth',
  ].join('\n'));
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'server.ext');
  return { caFile: file('ca.pem'), caPem: readFileSync(file('ca.pem'), 'utf8'), certPem: readFileSync(file('server.pem'), 'utf8'), keyPem: readFileSync(file('server.key'), 'utf8') };
}

/**
 * Trusts the CA in this process from now on. The server under test learns it through
 * NODE_EXTRA_CA_CERTS, read at process start; a test process that calls the code in-process
 * cannot set that any more, so it adds the CA to Node's default store instead.
 */
export function trustInThisProcess(ca: TestCa): void {
  setDefaultCACertificates([...getCACertificates('default'), ca.caPem]);
}

export interface ReceivedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as it arrived: what a signature is checked over. */
  rawBody: Buffer;
}

export interface ReceiverAnswer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
}

/** An HTTPS server with the test CA's certificate that records every request and answers via `respond`. */
export class HttpsReceiver {
  readonly requests: ReceivedRequest[] = [];
  private readonly server: Server;

  private constructor(ca: TestCa, respond: (request: ReceivedRequest) => ReceiverAnswer) {
    this.server = createServer({ cert: ca.certPem, key: ca.keyPem }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const received = { path: req.url ?? '/', headers: req.headers, rawBody: Buffer.concat(chunks) };
        this.requests.push(received);
        const answer = respond(received);
        res.writeHead(answer.status, answer.headers ?? { 'content-type': 'text/plain' });
        res.end(answer.body ?? '');
      });
    });
  }

  static async start(ca: TestCa, respond: (request: ReceivedRequest) => ReceiverAnswer = () => ({ status: 200, body: 'ok' })): Promise<HttpsReceiver> {
    const receiver = new HttpsReceiver(ca, respond);
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** A URL on this receiver; `host` may be 'localhost' to go through name resolution. */
  url(pathname = '/hook', host = '127.0.0.1'): string {
    return `https://${host}:${this.port}${pathname}`;
  }

  /** Requests whose path starts with `prefix`. */
  to(prefix: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.path.startsWith(prefix));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

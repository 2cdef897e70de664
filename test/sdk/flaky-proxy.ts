import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does with the next request: refuse it with a status, or pass it on and lose the answer. */
export type ProxyFault = { status: number; retryAfter?: string } | 'lose-answer';

/**
 * An HTTP proxy in front of the real server that misbehaves on cue, as a load balancer or a
 * struggling server does: the next requests are answered with a queued status (the server never
 * sees them), or forwarded and their answer dropped (the server stored the batch, the client
 * cannot know). Every request's arrival time and outcome is kept.
 */
export interface FlakyProxy {
  url: string;
  log: { at: number; path: string; outcome: string }[];
  fail(...faults: ProxyFault[]): void;
  close(): Promise<void>;
}

export async function startFlakyProxy(target: string): Promise<FlakyProxy> {
  const faults: ProxyFault[] = [];
  const log: FlakyProxy['log'] = [];
  const upstream = new URL(target);

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, loseAnswer: boolean) => {
    const out = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', () => {
          if (loseAnswer) return res.socket?.destroy();
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          res.end(Buffer.concat(chunks));
        });
      },
    );
    out.on('error', () => res.socket?.destroy());
    out.end(body);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const fault = faults.shift();
      const entry = { at: Date.now(), path: req.url ?? '', outcome: 'forwarded' };
      log.push(entry);
      if (fault === undefined) return forward(req, res, Buffer.concat(chunks), false);
      if (fault === 'lose-answer') {
        entry.outcome = 'answer lost';
        return forward(req, res, Buffer.concat(chunks), true);
      }
      entry.outcome = String(fault.status);
      res.writeHead(fault.status, { 'content-type': 'application/json', ...(fault.retryAfter ? { 'retry-after': fault.retryAfter } : {}) });
      res.end(JSON.stringify({ error: 'unavailable' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    log,
    fail: (...f) => faults.push(...f),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

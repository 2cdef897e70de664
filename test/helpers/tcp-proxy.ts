import net from 'node:net';

/**
 * A loopback TCP proxy in front of a real store, so one test can make Redis or Postgres
 * unreachable for its own app without touching the shared servers. `cut()` drops every open
 * connection and stops listening: the port then refuses connections, as a store that is down
 * does. `stall()` keeps connections open but forwards nothing, as a store that stopped answering
 * (a partition, a hung host) does. `restore()` undoes either, on the same port.
 */
export class TcpProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  private stalled = false;
  private boundPort = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** A proxy in front of the host and port of a store URL (`redis://…`, `postgres://…`). */
  static forUrl(url: string, defaultPort: number): TcpProxy {
    const parsed = new URL(url);
    return new TcpProxy(parsed.hostname || '127.0.0.1', Number(parsed.port || defaultPort));
  }

  get port(): number {
    if (!this.boundPort) throw new Error('tcp proxy not started');
    return this.boundPort;
  }

  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string {
    const parsed = new URL(url);
    parsed.hostname = '127.0.0.1';
    parsed.port = String(this.port);
    return parsed.toString();
  }

  async start(): Promise<number> {
    await this.listen(0);
    return this.port;
  }

  /** Destroys every proxied connection and stops listening, so the port refuses new ones. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.stalled = false;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    this.pairs.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Stops forwarding bytes, on open and new connections alike; nothing is lost, only held back. */
  stall(): void {
    this.stalled = true;
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  /** Listens again on the port of `start()` after `cut()`; forwards held-back bytes after `stall()`. */
  async restore(): Promise<void> {
    if (this.stalled) {
      this.stalled = false;
      for (const [client, upstream] of this.pairs) this.join(client, upstream);
    }
    if (this.server) return;
    await this.listen(this.port);
  }

  async close(): Promise<void> {
    await this.cut();
  }

  private async listen(port: number): Promise<void> {
    const server = net.createServer((client) => this.forward(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.boundPort = (server.address() as net.AddressInfo).port;
  }

  private forward(client: net.Socket): void {
    const upstream = net.connect({ host: this.targetHost, port: this.targetPort });
    const pair: [net.Socket, net.Socket] = [client, upstream];
    this.pairs.add(pair);
    for (const socket of pair) {
      this.sockets.add(socket);
      socket.setNoDelay(true);
      // Either side failing ends both: the client sees a reset, as with a store that went away.
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
      socket.on('close', () => {
        this.sockets.delete(socket);
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      });
    }
    if (this.stalled) {
      client.pause();
      upstream.pause();
    } else this.join(client, upstream);
  }

  private join(client: net.Socket, upstream: net.Socket): void {
    client.pipe(upstream);
    upstream.pipe(client);
  }
}

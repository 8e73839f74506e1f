// The processes listening in simulated pods: one TCP echo server on 127.0.0.1 per
// (namespace, pod, port) that port-forward reaches, started at first use. Each echoes what
// it reads and ends its side when the client ends its own.
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export class EchoServers {
  private readonly servers = new Map<string, Promise<Server>>();
  private readonly sockets = new Set<Socket>();
  /** Connections accepted, in all (tests). */
  accepted = 0;

  /** The local port of pod `key`'s echo server for `port`. */
  async portOf(key: string, port: number): Promise<number> {
    const id = `${key}:${port}`;
    let s = this.servers.get(id);
    if (!s) {
      s = new Promise<Server>((resolve, reject) => {
        const server = createServer({ allowHalfOpen: true }, (c) => {
          this.accepted++;
          this.sockets.add(c);
          c.on('close', () => this.sockets.delete(c));
          c.on('error', () => c.destroy());
          c.pipe(c);
        });
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve(server));
      });
      this.servers.set(id, s);
    }
    return ((await s).address() as AddressInfo).port;
  }

  /** Connections open now. */
  get open(): number {
    return this.sockets.size;
  }

  async close(): Promise<void> {
    for (const c of this.sockets) c.destroy();
    await Promise.all([...this.servers.values()].map(async (p) => {
      const s = await p.catch(() => undefined);
      await new Promise<void>((r) => (s ? s.close(() => r()) : r()));
    }));
    this.servers.clear();
  }
}

import { createConnection, createServer, Server, Socket } from 'node:net';

/**
 * A TCP proxy to a Redis that can lose a reply: once armed with a marker, the first command that carries it goes
 * through to Redis, and the connection is dropped before Redis's reply can come back, so that the client sees a
 * closed connection for a command that ran (what a failover does to a call in flight). Every other byte passes.
 */
export class ReplyDroppingProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private marker: string | undefined;
  /** Commands whose reply was dropped. */
  dropped = 0;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = createConnection(this.target);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.on('data', (chunk: Buffer) => {
        const marker = this.marker;
        if (marker !== undefined && chunk.includes(marker)) {
          this.marker = undefined;
          this.dropped++;
          // Redis runs it; its reply never reaches the client.
          upstream.unpipe(client);
          upstream.write(chunk, () => setTimeout(() => { client.destroy(); upstream.destroy(); }, 50));
          return;
        }
        upstream.write(chunk);
      });
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
  }

  /** The next command whose bytes include `marker` runs, and its reply is lost with its connection. */
  dropReplyOf(marker: string): void {
    this.marker = marker;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

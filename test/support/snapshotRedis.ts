import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';

/**
 * A redis-server of a test's own, in a directory of its own, that the test can kill -9 and start again from
 * its last snapshot (SAVE): a Redis that comes back with an older state. Call `stop()` in afterEach.
 */
export class SnapshotRedis {
  private readonly dir = mkdtempSync(join(tmpdir(), 'bullmq-throttle-snapshot-'));
  private server?: LocalRedisServer;

  async start(): Promise<number> {
    this.server = await startLocalRedisServer({ dir: this.dir });
    return this.server.port;
  }

  get port(): number {
    if (!this.server) throw new Error('SnapshotRedis: start() first');
    return this.server.port;
  }

  /** kill -9, then a new server on the same port from the directory's snapshot. */
  async restartFromSnapshot(): Promise<void> {
    const port = this.port;
    process.kill(this.server!.pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 200));
    this.server = await startLocalRedisServer({ port, dir: this.dir });
  }

  async stop(): Promise<void> {
    await this.server?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

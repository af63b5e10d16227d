import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { deleteKeysUnder } from './keys';

export interface BenchConnection {
  host: string;
  port: number;
  password?: string;
  username?: string;
  db?: number;
  maxRetriesPerRequest: null;
}

/** ioredis options for the bench Redis: every Queue and Worker built from them opens its own connections. */
export function connectionFor(url: string): BenchConnection {
  const parsed = new URL(url);
  const db = parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : undefined;
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 6379),
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    db: Number.isFinite(db) ? db : undefined,
    maxRetriesPerRequest: null,
  };
}

/** Polls `condition` every `pollMs` until it holds; rejects naming `what` after `timeoutMs`. */
export async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string, pollMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(pollMs);
  }
}

/** Adds `count` jobs named `name` with addBulk, `chunk` at a time; `data(i)` builds job i's data. */
export async function addBacklog(queue: Queue, count: number, data: (i: number) => object, name = 'job', chunk = 1000): Promise<void> {
  for (let i = 0; i < count; i += chunk) {
    const size = Math.min(chunk, count - i);
    await queue.addBulk(Array.from({ length: size }, (_, j) => ({ name, data: data(i + j) })));
  }
}

/**
 * One case's queues and workers under its own prefix (which starts with the benchmark's, so run.ts
 * would delete it too). close() closes the workers, obliterates and closes the queues and deletes every
 * key under the prefix (throttle keys included), whatever happened before.
 */
export class BullmqRig {
  readonly connection: BenchConnection;
  /** Errors the workers emitted: a benchmark reports them rather than ignore them. */
  readonly errors: Error[] = [];
  private readonly workers: Worker[] = [];
  private readonly queues: Queue[] = [];

  constructor(redisUrl: string, readonly prefix: string, private readonly redis: Redis) {
    this.connection = connectionFor(redisUrl);
  }

  queue(name: string): Queue {
    const queue = new Queue(name, { connection: this.connection, prefix: this.prefix });
    this.queues.push(queue);
    return queue;
  }

  /** Tracks a worker (plain or throttled) for close(), recording its 'error' events. */
  track<W extends Worker>(worker: W): W {
    worker.on('error', (error: Error) => { this.errors.push(error); });
    this.workers.push(worker);
    return worker;
  }

  /** Throws the first error a worker emitted, if any. */
  assertNoErrors(what: string): void {
    if (this.errors.length > 0) {
      throw new Error(`${what}: ${this.errors.length} worker error(s), first: ${this.errors[0].stack ?? this.errors[0].message}`);
    }
  }

  async close(): Promise<void> {
    const problems: unknown[] = [];
    const attempt = async (step: () => Promise<unknown>) => { try { await step(); } catch (error) { problems.push(error); } };
    for (const worker of this.workers.splice(0)) await attempt(() => worker.close());
    for (const queue of this.queues.splice(0)) {
      await attempt(() => queue.obliterate({ force: true }));
      await attempt(() => queue.close());
    }
    await attempt(() => deleteKeysUnder(this.redis, this.prefix));
    if (problems.length > 0) throw new Error(`cleanup of ${this.prefix} failed: ${String(problems[0])}`);
  }
}

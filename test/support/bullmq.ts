import { Queue, QueueOptions } from 'bullmq';
import { Redis } from 'ioredis';
import pino, { Logger } from 'pino';
import { Writable } from 'node:stream';
import { ThrottledWorker, ThrottledWorkerOptions } from '../../src';
import { deleteKeysUnder, uniquePrefix } from './redis';
import { testRedisUrl } from './testRedis';

export function connectionFor(url: string = testRedisUrl()): { host: string; port: number; maxRetriesPerRequest: null } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || 6379), maxRetriesPerRequest: null };
}

/** Everything a worker test opens, closed and deleted at the end whatever happened. */
export class WorkerTestBed {
  readonly prefix: string;
  readonly connection: ReturnType<typeof connectionFor>;
  private readonly closers: (() => Promise<unknown>)[] = [];

  constructor(label: string, url?: string) {
    this.prefix = uniquePrefix(label);
    this.connection = connectionFor(url);
  }

  queue(name: string, opts: Partial<QueueOptions> = {}): Queue {
    const queue = new Queue(name, { connection: this.connection, prefix: this.prefix, ...opts });
    this.closers.push(() => queue.close());
    return queue;
  }

  worker<D = any>(name: string, processor: ((job: import('bullmq').Job<D>, token?: string, signal?: AbortSignal) => Promise<unknown>) | string | null, opts: Omit<ThrottledWorkerOptions, 'connection'>): ThrottledWorker<D> {
    const worker = new ThrottledWorker<D>(name, processor, { connection: this.connection, prefix: this.prefix, ...opts });
    worker.on('error', (e) => { if (process.env.DEBUG_ERRORS) process.stderr.write('worker error: ' + e.message + '\n'); });
    this.closers.push(() => worker.close());
    return worker;
  }

  onClose(closer: () => Promise<unknown>): void {
    this.closers.push(closer);
  }

  async close(redis: Redis): Promise<void> {
    for (const close of this.closers.reverse()) await close().catch(() => undefined);
    await deleteKeysUnder(redis, this.prefix);
  }
}

export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A pino logger whose lines the test can read. */
export function capturingLogger(): { logger: Logger; lines: { level: number; msg: string; [key: string]: unknown }[] } {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

export async function redisNowMs(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import pino from 'pino';
import { Writable } from 'node:stream';
import { ThrottleAdmin, ThrottledWorker, ThrottledWorkerOptions } from '../../src';
import { DEFAULT_LEASE_MS } from '../../src/options/defaults';
import { START_DEADLINE_CEILING_MS } from '../../src/options/defaults';
import { WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';
import { nowMs } from '../support/processorStart';

/**
 * The delivery contract (issue 29, item 6): each guarantee family is one file in this folder, and each of its tests
 * runs once per delivery mode, against the same assertions:
 *   exact   the worker's defaults on one Redis: one script counts and delivers (takeNextJobs-19);
 *   leased  the same Redis given as the grantor option: tokens leased from the namespace (leaseTokens-1), pooled in
 *           the queue's slot and spent there (takeLeasedJobs-19), each expiring h after its request.
 * A test states a guarantee and checks it where a user sees it: at the processor's first line (this process's
 * clock) and from job.processedOn (the Redis clock). Leased delivery's sustained ceiling is N / (W + h), and a
 * token leased before a change may be spent up to h after it, so what a test asserts is the bound, and
 * utilisation only loosely if at all; no test asserts a wall-clock duration.
 */
export type ModeName = 'exact' | 'leased';

export interface DeliveryModeUnderTest {
  readonly name: ModeName;
  /** The worker options that choose the mode (none for exact; a grantor on the test Redis for leased). */
  options(): Partial<ThrottledWorkerOptions>;
  /**
   * The most h can be here: exact delivery with leaseMs 'auto' chooses it up to START_DEADLINE_CEILING_MS, leased
   * delivery uses DEFAULT_LEASE_MS. What was granted before a change may be delivered (leased: spent from a pool) or
   * may start (both) up to this long after it.
   */
  readonly hMs: number;
}

export const MODES: readonly DeliveryModeUnderTest[] = [
  { name: 'exact', options: () => ({}), hMs: START_DEADLINE_CEILING_MS },
  { name: 'leased', options: () => ({ grantor: { connection: testRedisUrl() } }), hMs: DEFAULT_LEASE_MS },
];

/** describe(title) once per delivery mode; the body registers its tests with the mode it runs in. */
export function describeEachMode(title: string, body: (mode: DeliveryModeUnderTest) => void): void {
  describe.each(MODES.map((mode) => [mode.name, mode] as const))(`${title} (%s delivery)`, (_name, mode) => body(mode));
}

/** This process's clock at sub-ms resolution: what a processor's first line sees. */
export const processNowMs = nowMs;

export interface Start {
  id: string;
  name: string;
  /** This process's clock at the processor's first line (ms). */
  at: number;
  /** bullmq's processedOn: the delivery, on the Redis clock (ms). */
  processedOn: number;
  /** When the processor returned or threw (this process's clock, ms). */
  endedAt?: number;
  data: any;
  attemptsMade: number;
}

/**
 * A processor that records each start at its first line (and its end), then runs `body`. The first line is the
 * first thing it does: nothing awaited before the clock is read.
 */
export function recordingProcessor(starts: Start[], body?: (job: Job, start: Start) => Promise<unknown> | unknown) {
  return async (job: Job): Promise<unknown> => {
    const start: Start = { at: processNowMs(), id: job.id!, name: job.name, processedOn: job.processedOn!, data: job.data, attemptsMade: job.attemptsMade };
    starts.push(start);
    try {
      return await body?.(job, start);
    } finally {
      start.endedAt = processNowMs();
    }
  };
}

/**
 * Everything a contract test opens: a WorkerTestBed whose workers take the mode's options (and log which delivery
 * they chose, so that each test checks it ran in the mode its title says), a Redis client, and a ThrottleAdmin.
 */
export class ContractBed {
  readonly bed: WorkerTestBed;
  readonly redis: Redis;
  private adminInstance?: ThrottleAdmin;
  private readonly chosen: string[] = [];

  constructor(label: string, readonly mode: DeliveryModeUnderTest) {
    this.bed = new WorkerTestBed(`${label}-${mode.name}`);
    this.redis = newRedis();
  }

  get prefix(): string {
    return this.bed.prefix;
  }

  queue(name: string) {
    return this.bed.queue(name);
  }

  worker<D = any>(name: string, processor: ((job: Job<D>) => Promise<unknown>) | null, opts: Omit<ThrottledWorkerOptions, 'connection'>): ThrottledWorker<D> {
    const chosen = this.chosen;
    const stream = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) {
          const { msg } = JSON.parse(line) as { msg?: string };
          if (msg === 'exact delivery' || msg === 'leased delivery') chosen.push(msg);
        }
        done();
      },
    });
    return this.bed.worker<D>(name, processor, { logger: pino({ level: 'info' }, stream), ...this.mode.options(), ...opts });
  }

  get admin(): ThrottleAdmin {
    // In leased delivery the admin reads the throttles where the workers lease them (here the same Redis).
    const grantor = this.mode.name === 'leased' ? { grantor: { connection: testRedisUrl() } } : {};
    this.adminInstance ??= new ThrottleAdmin({ connection: testRedisUrl(), prefix: this.bed.prefix, ...grantor });
    return this.adminInstance;
  }

  /** Every worker of the test chose the delivery mode the test is about. */
  expectMode(): void {
    expect(this.chosen.length).toBeGreaterThan(0);
    expect(new Set(this.chosen)).toEqual(new Set([`${this.mode.name} delivery`]));
  }

  async redisNowMs(): Promise<number> {
    const [seconds, micros] = await this.redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  async close(): Promise<void> {
    await this.adminInstance?.close().catch(() => undefined);
    await this.bed.close(this.redis);
    await this.redis.quit();
  }
}

/**
 * A ContractBed for each test of a describeEachMode body: made in beforeEach, closed in afterEach (after checking
 * that every worker ran in the mode). Read `current()` inside tests.
 */
export function useContractBed(label: string, mode: DeliveryModeUnderTest): () => ContractBed {
  let bed: ContractBed | undefined;
  beforeEach(() => { bed = new ContractBed(label, mode); });
  afterEach(async () => {
    const closing = bed;
    bed = undefined;
    try {
      closing?.expectMode();
    } finally {
      await closing?.close();
    }
  });
  return () => {
    if (!bed) throw new Error('the contract bed is made in beforeEach: use it inside tests');
    return bed;
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

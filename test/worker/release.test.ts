import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { getThrottledCount, Key, QueueStillThrottledError, Throttle, ThrottleAdmin } from '../../src';
import { crash } from '../support/crashWorker';
import { ThrottleKeys } from '../../src/keys/ThrottleKeys';
import { ScriptRunner } from '../../src/lua/scripts';
import { runIntakeJobs } from '../../src/lua/calls/intakeJobs';
import { releaseHeldBatch } from '../../src/queueState/heldJobRelease';
import { selectAdapter } from '../../src/bullmq/selectAdapter';
import { keysUnder, newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';
import { redisNowMs, waitFor, WorkerTestBed } from '../support/bullmq';
import { cli as runCli } from '../support/runCli';

const TTL_MS = 600;
const perCustomer = Throttle.named('per-customer').key([Key.data('customer')]).limit(1, '1m');
const attributes = (job: { data: unknown }) => ({ tier: (job.data as { tier?: string }).tier ?? 'basic' });

/** Every job of the queue: bullmq's counts plus what the throttle layer holds. */
async function accounted(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts();
  return Object.values(counts).reduce((sum, n) => sum + n, 0) + (await getThrottledCount(queue)).throttled;
}

function jobs(labels: string[], opts: Record<string, object> = {}) {
  return labels.map((label) => ({ name: label, data: { customer: label[0], label, tier: `t-${label}` }, opts: opts[label] }));
}

describe('releasing held jobs back to bullmq', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  let admin: ThrottleAdmin;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('release');
    admin = new ThrottleAdmin({ connection: redis, prefix: bed.prefix });
  });
  afterEach(async () => {
    await admin.close();
    await bed.close(redis);
    await redis.quit();
  });

  const state = (queue: string) => new ThrottleKeys(bed.prefix).queue(queue).state;
  // Lapsed in the registry and in the queue's own workers set, which releaseHeld reads: a worker writes the latter
  // a moment after the former (publishQueueConfig after registerDeclarations), so it lapses that moment later
  // (a loaded rehearsal saw releaseHeld answer 'declared' just after the registry said no live worker).
  const noLiveWorker = (queue: string) => async () => {
    if (!(await admin.liveEntries()).every((e) => e.queue !== queue)) return false;
    return (await redis.zcount(new ThrottleKeys(bed.prefix).queue(queue).workers, `(${await redisNowMs(redis)}`, '+inf')) === 0;
  };

  /** A plain bullmq Worker of concurrency 1 takes `count` jobs; resolves to them in the order it took them. */
  async function drain(queue: string, count: number): Promise<Job[]> {
    const taken: Job[] = [];
    const plain = new Worker(queue, async (job) => { taken.push(job); }, { connection: bed.connection, prefix: bed.prefix, concurrency: 1 });
    bed.onClose(() => plain.close());
    await waitFor(() => taken.length >= count, 15_000, `the plain worker to take ${count} jobs`);
    await new Promise((r) => setTimeout(r, 300));
    await plain.close();
    return taken;
  }

  it('releaseHeld puts back jobs held in full buckets, in classification and in classes of an old config, in queue order, with data and attributes', async () => {
    const name = 'three-states';
    const queue = bed.queue(name);
    const processed: string[] = [];
    const processor = async (job: Job) => { processed.push(job.name); };
    // Full buckets: b3 (lifo) and a1 go, the rest of customers a and b wait a minute for room. Counted at
    // processedOn (leaseMs 0): a start deadline on a loaded machine (load average 12 in a CI rehearsal beside
    // another session's tests) put a1 back for starting late, and a2 took its room; the order here is releaseHeld's.
    const first = bed.worker(name, processor, { concurrency: 1, leaseMs: 0, throttles: [perCustomer], attributes, declarationTtlMs: TTL_MS });
    await queue.addBulk(jobs(['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3'], { a3: { priority: 5 }, b3: { lifo: true } }));
    await waitFor(async () => processed.length === 2 && (await redis.hget(state(name), 'blocked')) === '5', 10_000, 'five jobs held on full buckets');
    expect(processed).toEqual(['b3', 'a1']);
    await crash(first);
    // A second deployment adds a throttle (a new config generation): the first one's classes are of an old one.
    const second = bed.worker(name, processor, { concurrency: 1, leaseMs: 0, throttles: [perCustomer, Throttle.named('extra').limit(100, '1m')], attributes, declarationTtlMs: TTL_MS });
    await second.waitUntilReady();
    await queue.addBulk(jobs(['d1', 'd2', 'd3']));
    await waitFor(async () => processed.length === 3 && (await redis.hget(state(name), 'blocked')) === '7', 10_000, 'd2, d3 held on a full bucket');
    await crash(second);
    // In classification: a worker took e1-e3 from wait and died before placing them; f1 was never taken.
    await queue.addBulk(jobs(['e1', 'e2', 'e3', 'f1']));
    const k = queue.keys;
    await runIntakeJobs(new ScriptRunner(redis), { bullmqKeys: k, intake: new ThrottleKeys(bed.prefix).queue(name).intake, mostJobs: 3, leaseMs: 30_000 });
    await waitFor(noLiveWorker(name), 5_000, 'the declarations to lapse');
    const classes = await redis.smembers(new ThrottleKeys(bed.prefix).queue(name).classes);
    expect(new Set(classes.map((member) => member.split('/')[0])).size).toBe(2);

    const held = ['a2', 'a3', 'a4', 'b1', 'b2', 'd2', 'd3', 'e1', 'e2', 'e3'];
    expect(await getThrottledCount(queue)).toEqual({ held: 7, classifying: 3, throttled: 10 });
    expect(await accounted(queue)).toBe(14);
    const hashes = new Map<string, Record<string, string>>();
    for (let id = 1; id <= 14; id++) hashes.set(String(id), await redis.hgetall(`${bed.prefix}:${name}:${id}`));

    expect(await admin.releaseHeld(name)).toBe(held.length);

    expect(await getThrottledCount(queue)).toEqual({ held: 0, classifying: 0, throttled: 0 });
    expect(await queue.getJobCounts('wait', 'prioritized', 'completed')).toEqual({ wait: 10, prioritized: 1, completed: 3 });
    expect(await accounted(queue)).toBe(14);
    // Nothing of the scheduler is left to treat the queue as throttled (getThrottledCount keeps a cursor of bullmq's events).
    // The queue's statistics of its throttles stay (they lapse a day after the last worker's refresh).
    const left = await keysUnder(redis, `${new ThrottleKeys(bed.prefix).queueBase(name)}:`);
    expect(left.filter((key) => !key.includes('::throttle:t:'))).toEqual([state(name)]);
    expect(Object.keys(await redis.hgetall(state(name)))).toEqual(['eventsCursor']);
    for (const [id, hash] of hashes) expect(await redis.hgetall(`${bed.prefix}:${name}:${id}`)).toEqual(hash);

    const taken = await drain(name, 11);
    expect(taken.map((job) => job.name)).toEqual(['a2', 'a4', 'b1', 'b2', 'd2', 'd3', 'e1', 'e2', 'e3', 'f1', 'a3']);
    for (const job of taken) expect(job.data).toEqual({ customer: job.name[0], label: job.name, tier: `t-${job.name}` });
    // Attributes stored by classification stay with the job (e1-e3 were never classified).
    expect(JSON.parse((await redis.hget(`${bed.prefix}:${name}:${taken[0].id}`, 'tha'))!)).toEqual({ tier: 't-a2' });
    expect(new Set([...processed, ...taken.map((j) => j.name)]).size).toBe(14);
    expect(await queue.getJobCounts('completed')).toEqual({ completed: 14 });
  });

  it("close() of a queue's last ThrottledWorker puts its held jobs back before it resolves; not while another one lives", async () => {
    const name = 'closing';
    const queue = bed.queue(name);
    const processed: string[] = [];
    const processor = async (job: Job) => { processed.push(job.name); };
    const one = bed.worker(name, processor, { throttles: [perCustomer] });
    const other = bed.worker(name, processor, { throttles: [perCustomer] });
    await Promise.all([one.waitUntilReady(), other.waitUntilReady()]);
    await queue.addBulk(jobs(['a1', 'a2', 'a3', 'b1', 'b2']));
    await waitFor(async () => processed.length === 2 && (await getThrottledCount(queue)).throttled === 3, 10_000, 'three jobs held');

    await expect(admin.releaseHeld(name)).rejects.toThrow(QueueStillThrottledError);
    await expect(admin.releaseHeld(name)).rejects.toThrow(`queue '${name}' has 2 live ThrottledWorker(s) under prefix '${bed.prefix}'`);
    await other.close();
    expect((await getThrottledCount(queue)).throttled).toBe(3);
    expect(await queue.getWaitingCount()).toBe(0);

    await one.close();
    expect((await getThrottledCount(queue)).throttled).toBe(0);
    expect(await queue.getWaitingCount()).toBe(3);
    expect(await redis.hmget(state(name), 'gen', 'config', 'held')).toEqual([null, null, null]);
    expect(await accounted(queue)).toBe(5);
    const taken = await drain(name, 3);
    expect(taken.map((job) => job.name)).toEqual(['a2', 'a3', 'b2']);
    expect([...processed, ...taken.map((j) => j.name)].sort()).toEqual(['a1', 'a2', 'a3', 'b1', 'b2']);
  });

  it("a crashed worker's held jobs go back, once its declaration lapses, through a live ThrottledWorker of another queue", async () => {
    const name = 'crashed';
    const queue = bed.queue(name);
    bed.worker('bystander', null, { throttles: [Throttle.named('other').limit(5, '1s')], declarationTtlMs: TTL_MS });
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'support', 'holdingWorkerProcess.ts')], {
      env: { ...process.env, HOLDING_WORKER: JSON.stringify({ url: testRedisUrl(), prefix: bed.prefix, queue: name, ttlMs: TTL_MS }) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    bed.onClose(async () => { child.kill('SIGKILL'); });
    await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
    await queue.addBulk(jobs(['a1', 'a2', 'a3', 'b1', 'b2']));
    await waitFor(async () => (await queue.getCompletedCount()) === 2 && (await getThrottledCount(queue)).throttled === 3, 10_000, 'three jobs held');
    child.kill('SIGKILL');
    const killedAt = Date.now();
    await waitFor(async () => (await queue.getWaitingCount()) === 3, 10_000, 'the held jobs back in wait');
    // Bounded: the time to live, one heartbeat of the bystander, and the release itself.
    expect(Date.now() - killedAt).toBeLessThan(TTL_MS + TTL_MS / 3 + 1_500);
    expect((await getThrottledCount(queue)).throttled).toBe(0);
    const taken = await drain(name, 3);
    expect(taken.map((job) => job.name)).toEqual(['a2', 'a3', 'b2']);
  });

  it('a ThrottledWorker starting while a release runs stops it, and delivers the rest; no job lost or twice, counts exact at every step', async () => {
    const name = 'race';
    const queue = bed.queue(name);
    const processed: string[] = [];
    const processor = async (job: Job) => { processed.push(job.name); };
    const first = bed.worker(name, processor, { throttles: [perCustomer], declarationTtlMs: TTL_MS });
    const labels = Array.from({ length: 80 }, (_, i) => `${'abcd'[i % 4]}${i}`);
    await queue.addBulk(jobs(labels));
    await waitFor(async () => processed.length === 4 && (await getThrottledCount(queue)).throttled === 76, 10_000, '76 jobs held');
    await crash(first);
    await waitFor(noLiveWorker(name), 5_000, 'the declaration to lapse');

    const runner = new ScriptRunner(redis);
    const keys = new ThrottleKeys(bed.prefix);
    let released = 0;
    for (let i = 0; i < 12; i++) {
      const step = await releaseHeldBatch(runner, keys, name, 10);
      expect(step.status).toBe('more');
      released += step.released;
      expect(await accounted(queue)).toBe(80);
    }
    // 7.6 steps merged the 76 jobs of the class lists into ready-jobs, 4.4 put 44 jobs back.
    expect(released).toBe(44);
    expect(await queue.getWaitingCount()).toBe(44);
    const next = bed.worker(name, processor, { concurrency: 4, throttles: [Throttle.named('per-customer').key([Key.data('customer')]).limit(1000, '1m')] });
    await next.waitUntilReady();
    expect(await releaseHeldBatch(runner, keys, name, 10)).toEqual({ status: 'declared', released: 0, left: expect.any(Number) });
    await waitFor(() => processed.length === 80, 15_000, 'every job processed');
    await new Promise((r) => setTimeout(r, 300));
    expect([...processed].sort()).toEqual([...labels].sort());
    expect(await queue.getJobCounts('completed')).toEqual({ completed: 80 });
  });

  it('a paused queue gets its jobs back without a wake-up marker, and plain workers take them once it resumes', async () => {
    const name = 'paused';
    const queue = bed.queue(name);
    const worker = bed.worker(name, async () => undefined, { throttles: [perCustomer], declarationTtlMs: TTL_MS });
    await queue.addBulk(jobs(['a1', 'a2', 'a3', 'b1', 'b2'], { a3: { priority: 2 } }));
    await waitFor(async () => (await queue.getCompletedCount()) === 2 && (await getThrottledCount(queue)).throttled === 3, 10_000, 'three jobs held');
    await crash(worker);
    await waitFor(noLiveWorker(name), 5_000, 'the declaration to lapse');
    await queue.pause();
    await redis.del(queue.keys.marker);
    expect(await admin.releaseHeld(name)).toBe(3);
    expect(await redis.zscore(queue.keys.marker, '0')).toBeNull();
    expect(await accounted(queue)).toBe(5);
    // bullmq 5 keeps a paused queue's waiting jobs in its paused list, bullmq 6 in wait.
    const waiting = selectAdapter().line === 5 ? queue.keys.paused : queue.keys.wait;
    expect(await redis.lrange(waiting, 0, -1)).toEqual([expect.any(String), expect.any(String)]);
    expect(await redis.zcard(queue.keys.prioritized)).toBe(1);
    await queue.resume();
    const taken = await drain(name, 3);
    expect(taken.map((job) => job.name)).toEqual(['a2', 'b2', 'a3']);
  });

  it('`bullmq-throttle release <queue>` prints how many went back, and refuses while a ThrottledWorker of the queue runs', async () => {
    const name = 'cli-release';
    const queue = bed.queue(name);
    const worker = bed.worker(name, async () => undefined, { throttles: [perCustomer], declarationTtlMs: TTL_MS });
    await queue.addBulk(jobs(['a1', 'a2', 'a3', 'b1', 'b2']));
    await waitFor(async () => (await queue.getCompletedCount()) === 2 && (await getThrottledCount(queue)).throttled === 3, 10_000, 'three jobs held');
    const global = ['--redis', testRedisUrl(), '--prefix', bed.prefix];

    const refused = await runCli(['release', name, ...global]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`^bullmq-throttle: queue '${name}' has 1 live ThrottledWorker\\(s\\) under prefix '${bed.prefix}': .*Close them first`));
    expect((await getThrottledCount(queue)).throttled).toBe(3);

    await crash(worker);
    await waitFor(noLiveWorker(name), 5_000, 'the declaration to lapse');
    const run = await runCli(['release', name, ...global]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`3 held jobs of queue ${name} went back to bullmq's wait/prioritized\n`);
    expect(await queue.getWaitingCount()).toBe(3);
    const again = await runCli(['--json', 'release', name, ...global]);
    expect(JSON.parse(again.stdout)).toEqual({ queue: name, released: 0 });
  });
});

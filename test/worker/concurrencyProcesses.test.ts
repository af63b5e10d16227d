import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { mostAtOnce } from '../support/inFlight';

interface Logged { event: 'ready' | 'start' | 'end'; id?: string; domain?: string; at?: number; pid: number }

const LOCK_MS = 1000;

// concurrency(n) across real worker processes, one of them killed (SIGKILL) with jobs in flight; in exact delivery,
// and in leased delivery with the throttle counted on a Redis of its own (the grantor option).
describe.each(['exact', 'leased'] as const)('concurrency across processes, %s delivery', (mode) => {
  let redis: Redis;
  let bed: WorkerTestBed;
  let grantorServer: LocalRedisServer | undefined;
  const children: ChildProcess[] = [];
  beforeAll(async () => { if (mode === 'leased') grantorServer = await startLocalRedisServer(); });
  afterAll(async () => { await grantorServer?.stop(); });
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('inflight-procs');
  });
  afterEach(async () => {
    for (const child of children) child.kill('SIGKILL');
    await bed.close(redis);
    await redis.quit();
  });

  const start = (config: object) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'support', 'inFlightWorkerProcess.ts')], {
      env: { ...process.env, IN_FLIGHT_WORKER: JSON.stringify({ url: testRedisUrl(), grantorUrl: grantorServer?.url, prefix: bed.prefix, ...config }) },
      stdio: 'ignore',
    });
    children.push(child);
    return child;
  };
  const logged = async (log: string): Promise<Logged[]> => (await redis.lrange(log, 0, -1)).map((line) => JSON.parse(line) as Logged);

  // Exact: until bullmq's stalled check takes them back. Leased: until the worker's hold at the grantor lapses,
  // which is after their locks lapsed (the hold outlives a lock by the stalled interval).
  it("a killed worker's jobs count until the stalled check takes them back (exact) or its hold lapses (leased), then free their slots; n is never exceeded", async () => {
    const queue = bed.queue('crawl');
    const log = `${bed.prefix}:log`;
    const n = 2;
    const hanger = start({ queue: 'crawl', n, hang: true, log, runMs: 60_000 });
    await waitFor(async () => (await logged(log)).some((l) => l.event === 'ready' && l.pid === hanger.pid), 20_000, 'the first worker ready');
    await queue.addBulk(Array.from({ length: 3 }, () => ({ name: 'page', data: { domain: 'slow.example' } })));
    await waitFor(async () => (await logged(log)).filter((l) => l.event === 'start').length === n, 10_000, 'n jobs in flight in the first worker');

    // The live workers are up before the kill, so that what they deliver meanwhile shows what the killed jobs hold.
    const live = [start({ queue: 'crawl', n, hang: false, log, runMs: 60_000 }), start({ queue: 'crawl', n, hang: false, log, runMs: 60_000 })];
    await waitFor(async () => {
      const entries = await logged(log);
      return live.every((child) => entries.some((l) => l.event === 'ready' && l.pid === child.pid));
    }, 20_000, 'the live workers ready');
    hanger.kill('SIGKILL');
    await new Promise((resolve) => hanger.once('exit', resolve));
    const [killedSeconds, killedMicros] = await redis.time();
    const killedAt = Number(killedSeconds) * 1000 + Math.floor(Number(killedMicros) / 1000);
    await queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'page', data: { domain: ['slow.example', 'fast.example', 'other.example'][i % 3] } })));
    await waitFor(async () => (await queue.getCompletedCount()) === 63, 45_000, 'every job completed, the killed worker\'s too');
    for (const child of live) child.kill('SIGTERM');

    const entries = await logged(log);
    const starts = entries.filter((l) => l.event === 'start');
    const endOf = new Map(entries.filter((l) => l.event === 'end').map((l) => [`${l.pid}/${l.id}`, l.at!]));
    const killedStarts = starts.filter((s) => s.pid === hanger.pid);
    expect(killedStarts).toHaveLength(n);
    // A killed job is in flight from its delivery until bullmq's stalled check takes it back (its 'stalled' event, on the Redis clock).
    const stalledAt = new Map<string, number>();
    for (const [id, fields] of await redis.xrange(`${bed.prefix}:crawl:events`, '-', '+')) {
      const event = Object.fromEntries(fields.flatMap((_, i) => (i % 2 === 0 ? [[fields[i], fields[i + 1]]] : [])));
      if (event.event === 'stalled' && !stalledAt.has(event.jobId)) stalledAt.set(event.jobId, Number(id.split('-')[0]));
    }
    const spans = starts.map((s) => {
      if (s.pid !== hanger.pid) return { domain: s.domain, from: s.at!, to: endOf.get(`${s.pid}/${s.id}`)! };
      expect(stalledAt.has(s.id!)).toBe(true);
      // Leased: a killed job's lock may be held until LOCK_MS after the kill at the latest; it counts that long at least.
      return { domain: s.domain, from: s.at!, to: mode === 'exact' ? stalledAt.get(s.id!)! : killedAt + LOCK_MS };
    });
    for (const domain of ['slow.example', 'fast.example', 'other.example']) {
      expect(mostAtOnce(spans.filter((s) => s.domain === domain))).toBeLessThanOrEqual(n);
    }
    // While the killed jobs counted, no other slow.example job went: the first live one came after the stalled check (lock 1 s,
    // checks every 1 s), or, leased, after the killed worker's locks could have lapsed.
    const firstLive = Math.min(...starts.filter((s) => s.pid !== hanger.pid && s.domain === 'slow.example').map((s) => s.at!));
    expect(firstLive).toBeGreaterThanOrEqual(mode === 'exact' ? Math.min(...stalledAt.values()) : killedAt + LOCK_MS);
    process.stderr.write(`concurrency ${n}, ${mode}: killed with ${n} in flight; the domain's next delivery ${firstLive - killedAt} ms after the kill\n`);
    // The other domains flowed meanwhile.
    const othersBefore = starts.filter((s) => s.pid !== hanger.pid && s.domain !== 'slow.example' && s.at! < firstLive);
    expect(othersBefore.length).toBeGreaterThan(0);
  }, 90_000);
});

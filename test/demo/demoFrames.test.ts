import { Queue } from 'bullmq';
import { mostInAnyWindow } from '../../src';
import { demoRows } from '../../src/demo/demoRows';
import { guaranteeChecks, summaryLines } from '../../src/demo/demoSummary';
import { demoFrame } from '../../src/demo/demoView';
import { addDemoJobs, bucketOf, Delivery, demoJobs, PER_CUSTOMER_LIMIT, startDemoWorker } from '../../src/demo/demoWorkload';
import { redisTimeMs } from '../../src/redis/redisClock';
import { deleteKeysUnder, newRedis, uniquePrefix } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';

/** Per row of a frame: its label and its "n/limit" figure (rows of unthrottled jobs have no limit). */
function figures(frame: readonly string[]): { label: string; n: number; limit: number }[] {
  return frame.flatMap((line) => {
    const found = /^(\S.*?|\s+per-customer \S+)\s+\[[#.+]+\]\s+(\d+)\/(\d+)\s/.exec(line);
    return found ? [{ label: found[1].trim(), n: Number(found[2]), limit: Number(found[3]) }] : [];
  });
}

describe('the demo\'s frames, drawn while its throttles pace a real queue', () => {
  const redis = newRedis();
  const prefix = uniquePrefix('demo-frames');
  const url = new URL(testRedisUrl());
  const connection = { host: url.hostname, port: Number(url.port || 6379), password: url.password || undefined, maxRetriesPerRequest: null };
  const queue = new Queue('orders', { connection, prefix });
  const delivered: Delivery[] = [];
  const worker = startDemoWorker({ connection, prefix, onDelivery: (d) => delivered.push(d) });

  afterAll(async () => {
    await worker.close();
    await queue.obliterate({ force: true });
    await queue.close();
    await deleteKeysUnder(redis, prefix);
    await redis.quit();
  });

  it('never show a bucket above its limit, a full bucket reads full, and "the last second" ends now', async () => {
    await worker.waitUntilReady();
    // acme's bucket is full at once (its first 4 go together) and stays full while its backlog drains.
    const jobs = demoJobs({ acme: 10, perSmallCustomer: 2, emails: 6 });
    const totals = new Map<string, number>();
    for (const job of jobs) totals.set(bucketOf(job), (totals.get(bucketOf(job)) ?? 0) + 1);
    await addDemoJobs(queue, jobs);

    const frames: string[][] = [];
    const frameNow = async () => demoFrame(0, demoRows(delivered, totals, await redisTimeMs(redis, `${prefix}:demo`)));
    const deadline = Date.now() + 30_000;
    while (delivered.length < jobs.length && Date.now() < deadline) {
      frames.push(await frameNow());
      await new Promise((r) => setTimeout(r, 40));
    }
    expect(delivered).toHaveLength(jobs.length);
    frames.push(await frameNow());

    const shown = frames.flatMap(figures);
    expect(shown.length).toBeGreaterThan(0);
    for (const { label, n, limit } of shown) expect({ label, n }).toEqual({ label, n: Math.min(n, limit) });
    // The scenario did fill a bucket, and the frames showed it full.
    expect(Math.max(...shown.filter((f) => f.label === 'per-customer acme').map((f) => f.n))).toBe(PER_CUSTOMER_LIMIT);
    // What the frames showed is bounded by what the final check measures from processedOn.
    const checks = guaranteeChecks(delivered);
    for (const check of checks) expect(check.most).toBeLessThanOrEqual(check.limit);
    expect(mostInAnyWindow(delivered.filter((d) => d.bucket === 'acme').map((d) => d.processedOn), 1000)).toBe(PER_CUSTOMER_LIMIT);

    // A second after the last delivery, the last second holds none: the window ends now, not at the last delivery.
    const last = Math.max(...delivered.map((d) => d.processedOn));
    while ((await redisTimeMs(redis, `${prefix}:demo`)) <= last + 1000) await new Promise((r) => setTimeout(r, 50));
    const after = await frameNow();
    expect(figures(after).every((f) => f.n === 0)).toBe(true);
    expect(after.find((l) => l.startsWith('emails'))).toMatch(/^emails \(unthrottled\) +\[\.+\] +0 +6 +6$/);
  });

  it('the summary wraps between words, at 100 columns as at 40', () => {
    const at = (ms: number, bucket: string): Delivery => ({ bucket, charge: bucket !== 'emails', processedOn: 1_000_000 + ms, startedAt: 2_000_000 + ms });
    const delivered = [at(0, 'emails'), at(5, 'globex'), at(10, 'acme'), at(1500, 'acme'), at(9_110, 'acme')];
    for (const width of [100, 40]) {
      const lines = summaryLines(delivered, guaranteeChecks(delivered), true, width);
      const prose = lines.filter((l) => !/^ {2}(ok|FAIL) /.test(l));
      for (const l of prose) expect([...l].length).toBeLessThanOrEqual(width);
      const text = prose.join(' ');
      for (const word of ['Flowing', 'backlog:', 'delivered', 'customers', "acme's", 'charges', '9.11']) expect(text).toMatch(new RegExp(`(^| )${word.replace('.', '\\.')}( |$)`));
    }
    expect(summaryLines(delivered, guaranteeChecks(delivered), true, 100).at(-1)).toBe('All deliveries stayed within every limit.');
    expect(summaryLines(delivered, guaranteeChecks(delivered), true, 100)).toContainEqual(expect.stringMatching(/^ {2}ok +stripe-per-customer acme: most in any 1 s +1 \/ 1 ≤ 4$/));
  });
});

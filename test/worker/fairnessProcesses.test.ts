import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';

// Issue 30's proof for fair shares, across processes: three tenants, one with 10× the backlog added first, sharing
// limit(20, '1s') through two worker processes: the small tenants finish as if the limit were split three ways, and
// the big one keeps its share meanwhile. Real time: the first 5 s of the drain.
describe('fair shares across two worker processes', () => {
  const bed = new WorkerTestBed('fair-processes');
  const redis: Redis = newRedis();
  afterAll(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it('three tenants, one with 10× the backlog added first, sharing limit(20, 1s)', async () => {
    const queue = bed.queue('tenants');
    await queue.addBulk(Array.from({ length: 200 }, (_, i) => ({ name: 'call', data: { tenant: 'bigco', i } })));
    await queue.addBulk(['acme', 'initech'].flatMap((tenant) => Array.from({ length: 20 }, (_, i) => ({ name: 'call', data: { tenant, i } }))));
    const run = () => new Promise<{ at: number; tenant: string }[]>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'support', 'fairnessWorkerProcess.ts')], {
        env: { ...process.env, FAIRNESS_WORKER: JSON.stringify({ url: testRedisUrl(), prefix: bed.prefix, queue: 'tenants', runMs: 5_500, max: 20, windowMs: 1_000 }) },
        maxBuffer: 16 << 20,
      }, (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout))));
    });
    const starts = (await Promise.all([run(), run()])).flat().sort((a, b) => a.at - b.at);
    const order = starts.map((s) => s.tenant);
    const lastSmall = Math.max(order.lastIndexOf('acme'), order.lastIndexOf('initech'));
    const held = order.slice(20, lastSmall + 1);
    const bigShare = held.filter((t) => t === 'bigco').length / held.length;
    console.log(`fairness across processes: ${order.length} starts; the small tenants' last the ${lastSmall + 1}th; the big one's share of the held starts meanwhile ${bigShare.toFixed(2)}`);
    // Both small tenants done: 40 of their jobs within the first window's 20 and three ways of 40 more (25% slack).
    expect(order.filter((t) => t !== 'bigco')).toHaveLength(40);
    expect(lastSmall).toBeLessThan(20 + Math.ceil(3 * 20 * 1.25));
    expect(bigShare).toBeGreaterThan(0.2);
    expect(bigShare).toBeLessThan(0.45);
  }, 30_000);
});

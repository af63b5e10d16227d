import { Redis } from 'ioredis';
import { Key, Missing, mostInAnyWindow, Throttle } from '../../src';
import { newRedis } from '../support/redis';
import { capturingLogger, waitFor, WorkerTestBed } from '../support/bullmq';

describe('attributes and classification', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('attrs');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  const perAccount = Throttle.named('stripe-per-account').key([Key.attribute('stripe_account')]).whenKeyMissing(Missing.Unthrottled).limit(2, '1m');

  it('computes attributes once per job, stores them with it, and keys on them', async () => {
    const queue = bed.queue('attrs');
    const calls: string[] = [];
    const seen: { name: string; account?: string }[] = [];
    bed.worker('attrs', async (job) => { seen.push({ name: job.name, account: job.data.account }); }, {
      concurrency: 4,
      throttles: [perAccount],
      attributes: (job) => {
        calls.push(job.id);
        const data = job.data as { account?: string };
        return { stripe_account: job.name === 'charge' ? data.account : undefined };
      },
    });
    // A producer cannot dodge the throttle by leaving out a header: the attribute comes from the worker's function.
    await queue.addBulk([
      ...Array.from({ length: 5 }, () => ({ name: 'charge', data: { account: 'acct_1' } })),
      ...Array.from({ length: 3 }, () => ({ name: 'email', data: { account: 'acct_1' } })),
    ]);
    await waitFor(() => seen.length === 5, 10_000, 'two charges and three emails');
    await new Promise((r) => setTimeout(r, 300));
    expect(seen.filter((j) => j.name === 'charge')).toHaveLength(2);
    expect(seen.filter((j) => j.name === 'email')).toHaveLength(3);
    expect(calls).toHaveLength(8);
    expect(new Set(calls).size).toBe(8);
    const [jobId] = (await queue.getJobs(['completed'])).map((j) => j.id);
    expect(JSON.parse((await redis.hget(`${bed.prefix}:attrs:${jobId}`, 'tha'))!)).toEqual(expect.any(Object));
  });

  it('a throttle added later classifies the held backlog from stored data and attributes, losing and repeating nothing', async () => {
    const queue = bed.queue('later');
    let attributeCalls = 0;
    const attributes = (job: { data: unknown }) => { attributeCalls++; return { stripe_account: (job.data as { account: string }).account }; };
    const delivered: string[] = [];
    const processor = async (job: import('bullmq').Job) => { delivered.push(job.id!); };
    // First deployment: one throttle, 3 per minute for the whole queue; most of the backlog is held.
    const first = bed.worker('later', processor, { concurrency: 4, throttles: [Throttle.named('global').limit(3, '1m')], attributes });
    await queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'charge', data: { account: `acct_${i % 4}` } })));
    await waitFor(() => delivered.length === 3, 10_000, 'the first three');
    await waitFor(async () => (await queue.getWaitingCount()) === 0, 10_000, 'the backlog to be classified');
    expect(attributeCalls).toBe(40);
    // Second deployment replaces the first: a per-account throttle keyed on the stored attribute.
    const second = bed.worker('later', processor, { concurrency: 4, throttles: [perAccount], attributes });
    await second.waitUntilReady();
    await first.close();
    await waitFor(() => delivered.length === 3 + 8, 15_000, 'two per account');
    await new Promise((r) => setTimeout(r, 500));
    expect(delivered).toHaveLength(11);
    expect(new Set(delivered).size).toBe(11);
    expect(attributeCalls).toBe(40);
    const counts = await queue.getJobCounts();
    const { getThrottledCount } = await import('../../src');
    expect(counts.completed + (await getThrottledCount(queue)).throttled).toBe(40);
  });

  it('an attributes function that throws holds the job under the missing-key policy and logs the error', async () => {
    const queue = bed.queue('throws');
    const { logger, lines } = capturingLogger();
    const shared = Throttle.named('shared-missing').key([Key.attribute('tenant')]).limit(1, '1m');
    const seen: string[] = [];
    bed.worker('throws', async (job) => { seen.push(job.id!); }, {
      throttles: [shared], logger,
      attributes: () => { throw new Error('boom'); },
    });
    await queue.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {} }]);
    await waitFor(() => seen.length === 1, 10_000, 'one delivery from the shared bucket');
    await new Promise((r) => setTimeout(r, 300));
    expect(seen).toHaveLength(1);
    expect(lines.some((l) => /attributes function threw/.test(l.msg))).toBe(true);
  });

  it('job data that is not JSON, or a key path that names an object, counts as missing the key', async () => {
    const queue = bed.queue('bad-data');
    const { logger, lines } = capturingLogger();
    const byCustomer = Throttle.named('by-customer').key([Key.data('customer')]).whenKeyMissing(Missing.Unthrottled).limit(1, '1m');
    const worker = bed.worker('bad-data', async () => undefined, { throttles: [byCustomer], logger, autorun: false });
    await worker.waitUntilReady();
    const objectKey = await queue.add('object', { customer: { id: 1 } });
    const broken = await queue.add('broken', { customer: 'x' });
    await redis.hset(`${bed.prefix}:bad-data:${broken.id}`, 'data', '{not json');
    const completed: string[] = [];
    worker.on('completed', (job) => completed.push(job.name));
    void worker.run();
    await waitFor(() => completed.includes('object'), 10_000, 'the job with an object key to go, unthrottled');
    await waitFor(() => lines.some((l) => /job data is not JSON/.test(l.msg)), 10_000, 'the warning about broken data');
    expect(lines.some((l) => /not a string, finite number or boolean/.test(l.msg))).toBe(true);
    // Nothing is lost: bullmq itself then reports that it cannot parse the job's data, and keeps the job.
    expect(await redis.exists(`${bed.prefix}:bad-data:${broken.id}`)).toBe(1);
    expect(objectKey.id).toBeDefined();
  });

  it('mostInAnyWindow counts the largest burst of any window', () => {
    expect(mostInAnyWindow([0, 100, 999, 1000, 1001], 1000)).toBe(4);
    expect(mostInAnyWindow([], 1000)).toBe(0);
  });
});

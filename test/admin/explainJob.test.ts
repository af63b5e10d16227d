import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Key, Throttle, ThrottleAdmin } from '../../src';
import { bucketCommand } from '../../src/cli/commands/bucket';
import { whyCommand } from '../../src/cli/commands/why';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

// ThrottleAdmin.explainJob and the CLI's why: a job held on a full bucket, on a paused one, and one not held.
describe('explainJob', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  let admin: ThrottleAdmin;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('why');
    admin = new ThrottleAdmin({ connection: testRedisUrl(), prefix: bed.prefix });
  });
  afterEach(async () => {
    await admin.close();
    await bed.close(redis);
    await redis.quit();
  });

  it('names the bucket holding a job, what it counts, when room returns; and a paused one; and a job not held', async () => {
    const queue = bed.queue('explained');
    const delivered: string[] = [];
    const perCustomer = Throttle.named('api-per-customer').key([Key.data('customer')]).limit(2, '1m');
    const shared = Throttle.named('api').limit(1000, '1s');
    bed.worker('explained', async (job: Job) => { delivered.push(job.id!); }, { concurrency: 2, throttles: [perCustomer, shared] });
    const jobs = await queue.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'call', data: { customer: i < 3 ? 'acme' : 'globex' } })));
    await waitFor(() => delivered.length === 3, 10_000, 'two acme jobs and the globex one delivered');
    const third = jobs[2].id!;
    await waitFor(async () => (await admin.explainJob('explained', third)).held === 'waiting-on-bucket', 10_000, 'the third acme job held');
    const explanation = await admin.explainJob('explained', third);
    expect(explanation.state).toBe('held');
    const holding = explanation.buckets.find((b) => b.holdsIt)!;
    expect(holding).toMatchObject({ throttle: 'api-per-customer', key: ['acme'], limits: [{ windowMs: 60_000, max: 2, counted: 2 }] });
    expect(explanation.buckets.map((b) => b.throttle).sort()).toEqual(['api', 'api-per-customer']);
    expect(holding.bindingNow).toBe('2 per 1m');
    expect(explanation.buckets.find((b) => b.throttle === 'api')!.bindingNow).toBeNull();
    expect((await admin.throttleStats('api-per-customer')).effective).toEqual({ perSecond: 2 / 60, binding: '2 per 1m' });
    expect(explanation.roomAt).toBeGreaterThan(explanation.at + 50_000);
    expect(explanation.reason).toMatch(/^waiting: api-per-customer \[acme\] is full \(2\/2 per 1m\); room returns in (\d+(\.\d)?s|1m); first in line there$/);
    expect(await whyCommand(admin, 'explained', third)).toContain('api-per-customer acme (holds it)');

    await admin.pause('api-per-customer', { key: ['acme'] });
    await admin.setLimits('api-per-customer', [{ max: 10, window: '1m' }], { key: ['acme'] });
    await waitFor(async () => /is paused until resumed/.test((await admin.explainJob('explained', third)).reason), 10_000, 'the pause named');
    expect((await admin.throttleBucket('api-per-customer', ['acme']))).toMatchObject({ bindingNow: 'paused', effective: { perSecond: 10 / 60, binding: '10 per 1m' } });

    const done = await admin.explainJob('explained', jobs[3].id!);
    expect(done.held).toBeNull();
    expect(done.state).toBe('completed');
    expect(done.reason).toBe('not held by the throttle layer: bullmq has it as completed');
    expect((await admin.explainJob('explained', 'no-such-job')).reason).toBe('job no-such-job does not exist in queue explained');
  });

  it('promises no room while a pause without an end holds the bucket; a pause with an end is room at its end', async () => {
    const queue = bed.queue('paused');
    const delivered: string[] = [];
    const perCustomer = Throttle.named('paused-per-customer').key([Key.data('customer')]).limit(2, '1m');
    bed.worker('paused', async (job: Job) => { delivered.push(job.id!); }, { concurrency: 2, throttles: [perCustomer] });
    // acme full (2/2), globex with room (1/2): both are then paused, acme until resumed, globex for a minute.
    await queue.addBulk([...['acme', 'acme', 'globex'].map((customer) => ({ name: 'call', data: { customer } }))]);
    await waitFor(() => delivered.length === 3, 10_000, 'two acme jobs and a globex one delivered');
    await admin.pause('paused-per-customer', { key: ['acme'] });
    const { until } = await admin.pause('paused-per-customer', { key: ['globex'], forMs: 60_000 });
    const [acmeJob, globexJob] = await queue.addBulk([{ name: 'call', data: { customer: 'acme' } }, { name: 'call', data: { customer: 'globex' } }]);
    await waitFor(async () => (await admin.explainJob('paused', acmeJob.id!)).held === 'waiting-on-bucket', 10_000, "acme's job held");
    await waitFor(async () => (await admin.explainJob('paused', globexJob.id!)).held === 'waiting-on-bucket', 10_000, "globex's job held");

    const acme = await admin.throttleBucket('paused-per-customer', ['acme']);
    expect(acme).toMatchObject({ paused: { until: null }, bindingNow: 'paused', nextRoomAt: null, limits: [{ windowMs: 60_000, max: 2, counted: 2 }] });
    // Its limit alone would free up within the minute: the pause, not the limit, says when room returns.
    expect(acme.limits[0].roomAt).toEqual(expect.any(Number));
    const held = await admin.explainJob('paused', acmeJob.id!);
    expect(held.roomAt).toBeNull();
    expect(held.reason).toBe('waiting: paused-per-customer [acme] is paused until resumed; first in line there');
    expect(held.buckets).toEqual([expect.objectContaining({ key: ['acme'], holdsIt: true, nextRoomAt: null })]);
    expect(await whyCommand(admin, 'paused', acmeJob.id!)).toMatch(/paused-per-customer acme \(holds it\) +2\/2 per 1m +paused until resumed/);
    expect(await bucketCommand(admin, 'paused-per-customer', ['acme'])).toMatch(/next room +when resumed/);

    const globex = await admin.throttleBucket('paused-per-customer', ['globex']);
    expect(globex).toMatchObject({ paused: { until }, bindingNow: 'paused', nextRoomAt: until, limits: [{ counted: 1, roomAt: null }] });
    const pausedForAWhile = await admin.explainJob('paused', globexJob.id!);
    expect(pausedForAWhile.roomAt).toBe(until);
    expect(pausedForAWhile.reason).toMatch(/^waiting: paused-per-customer \[globex\] is paused for (\d+(\.\d)?s|1m) more; room returns in (\d+(\.\d)?s|1m); first in line there$/);

    expect(await admin.resume('paused-per-customer')).toBe(2);
    await waitFor(() => delivered.includes(globexJob.id!), 10_000, "globex's job delivered once resumed");
    const resumed = await admin.throttleBucket('paused-per-customer', ['acme']);
    expect(resumed.paused).toBeNull();
    expect(resumed.nextRoomAt).toBe(resumed.limits[0].roomAt);
  });

  it('gives a waiting job its place in line and when it goes, within 20% of when it then went', async () => {
    const queue = bed.queue('eta');
    const startedAt = new Map<string, number>();
    const jobs = await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'call', data: { i } })));
    const worker = bed.worker('eta', async (job: Job) => { startedAt.set(job.id!, Date.now()); }, { concurrency: 10, throttles: [Throttle.named('eta').limit(2, '1s')] });
    await waitFor(() => startedAt.size === 2, 10_000, 'the first 2 delivered');
    // The 8th job: 5 of the 8 waiting are ahead of it, so it goes in the third window after room returns.
    const eighth = jobs[7].id!;
    await waitFor(async () => (await admin.explainJob('eta', eighth)).held === 'waiting-on-bucket', 10_000, 'the 8th job waiting');
    const explanation = await admin.explainJob('eta', eighth);
    expect(explanation.position).toBe(5);
    expect(explanation.estimatedAt).toBe(explanation.roomAt! + 2_000);
    expect(explanation.reason).toMatch(/; 5 jobs ahead of it there, it goes in about \d+(\.\d)?s$/);
    expect(await whyCommand(admin, 'eta', eighth)).toContain('5 jobs ahead of it there');
    await waitFor(() => startedAt.has(eighth), 10_000, 'the 8th job delivered');
    const promised = explanation.estimatedAt! - explanation.at;
    const took = startedAt.get(eighth)! - explanation.at;
    // A job put back for starting late (a busy machine) waits for room again, a window later than any estimate.
    if (worker.startDeadline.putBack === 0) expect(Math.abs(took - promised)).toBeLessThanOrEqual(0.2 * took);
  });
});

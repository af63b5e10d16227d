import { Job, QueueKeys } from 'bullmq';
import { Key, RetryAfterError, Throttle, ThrottleKeys } from '../../src';
import { leaseTokens } from '../../src/delivery/leased/grantorCalls';
import { bucketPartsOf } from '../../src/delivery/leased/leaseBook';
import { takeLeasedJobs } from '../../src/delivery/leased/takeLeasedJobs';
import type { QueueThrottleKeys } from '../../src/keys/ThrottleKeys';
import { ScriptRunner } from '../../src/lua/scripts';
import { ReplicaConfirmation } from '../../src/redis/ReplicaConfirmation';
import { waitFor } from '../support/bullmq';
import { ContractBed, describeEachMode, MODES, processNowMs, recordingProcessor, sleep, Start, useContractBed } from './contractSuite';

// Pauses (ThrottleAdmin.pause / resume, RetryAfterError): a paused bucket delivers nothing until the pause ends or
// is lifted, for every worker, while the other buckets flow. What was granted before the pause may still be
// delivered (leased: spent from a pool) or start up to h after it; nothing later.
describeEachMode('contract: pauses', (mode) => {
  const bed = useContractBed('cpause', mode);
  const perCustomer = Throttle.named('api-per-customer').key([Key.data('customer')]).limit(100, '1s');

  it('a bucket paused before its jobs come delivers none of them until resumed; the others flow', async () => {
    const queue = bed().queue('one-key');
    const starts: Start[] = [];
    const worker = bed().worker('one-key', recordingProcessor(starts), { concurrency: 4, throttles: [perCustomer] });
    await worker.waitUntilReady();
    expect(await bed().admin.pause('api-per-customer', { key: ['acme'] })).toEqual({ until: null });
    await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'call', data: { customer: i % 2 ? 'acme' : 'globex' } })));
    await waitFor(() => starts.filter((s) => s.data.customer === 'globex').length === 6, 20_000, 'globex delivered');
    await sleep(400);
    expect(starts.filter((s) => s.data.customer === 'acme')).toEqual([]);
    const resumedAt = await bed().redisNowMs();
    expect(await bed().admin.resume('api-per-customer', { key: ['acme'] })).toBe(1);
    await waitFor(() => starts.length === 12, 20_000, 'acme delivered after the resume');
    expect(Math.min(...starts.filter((s) => s.data.customer === 'acme').map((s) => s.processedOn))).toBeGreaterThanOrEqual(resumedAt);
  });

  it('a timed pause of the whole throttle holds every bucket until it ends', async () => {
    const queue = bed().queue('whole');
    const starts: Start[] = [];
    const worker = bed().worker('whole', recordingProcessor(starts), { concurrency: 4, throttles: [perCustomer] });
    await worker.waitUntilReady();
    const { until } = await bed().admin.pause('api-per-customer', { forMs: 600 });
    await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'call', data: { customer: `c${i % 3}` } })));
    await waitFor(() => starts.length === 6, 20_000, 'every job delivered once the pause ended');
    expect(Math.min(...starts.map((s) => s.processedOn))).toBeGreaterThanOrEqual(until!);
  });

  it('a bucket paused while it flows: nothing of it is delivered or starts later than h after the pause; the others flow', async () => {
    const queue = bed().queue('flowing');
    const starts: Start[] = [];
    const processor = recordingProcessor(starts, () => sleep(40));
    bed().worker('flowing', processor, { concurrency: 3, throttles: [perCustomer] });
    bed().worker('flowing', processor, { concurrency: 3, throttles: [perCustomer] });
    await queue.addBulk(Array.from({ length: 80 }, (_, i) => ({ name: 'call', data: { customer: i % 2 ? 'acme' : 'globex' } })));
    await waitFor(() => starts.filter((s) => s.data.customer === 'acme').length >= 6, 20_000, 'acme flowing');
    await bed().admin.pause('api-per-customer', { key: ['acme'] });
    const pausedAt = await bed().redisNowMs();
    const pausedAtHere = processNowMs();
    await waitFor(() => starts.filter((s) => s.data.customer === 'globex').length === 40, 20_000, 'globex delivered');
    await sleep(300);
    const acme = starts.filter((s) => s.data.customer === 'acme');
    expect(acme.length).toBeLessThan(40);
    expect(acme.filter((s) => s.processedOn > pausedAt + mode.hMs)).toEqual([]);
    expect(acme.filter((s) => s.at > pausedAtHere + mode.hMs)).toEqual([]);
    await bed().admin.resume('api-per-customer', { key: ['acme'] });
    await waitFor(() => starts.length === 80, 20_000, 'acme delivered after the resume');
  });

  it('RetryAfterError pauses the job\'s bucket for every worker and puts the job back held, without an attempt', async () => {
    const queue = bed().queue('retry-after');
    const starts: Start[] = [];
    const pauseMs = 700;
    let acmeSeen = 0;
    let thrownAt = 0;
    // The fourth acme job to start throws, while acme flows on two workers.
    const throwOnce = async (job: Job) => {
      if (job.data.customer === 'acme' && ++acmeSeen === 4) {
        thrownAt = await bed().redisNowMs();
        throw new RetryAfterError(pauseMs);
      }
      await sleep(30);
    };
    bed().worker('retry-after', recordingProcessor(starts, throwOnce), { concurrency: 3, throttles: [perCustomer] });
    bed().worker('retry-after', recordingProcessor(starts, throwOnce), { concurrency: 3, throttles: [perCustomer] });
    await queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'call', data: { customer: i % 2 ? 'acme' : 'globex' } })));
    if (mode.name === 'leased') {
      // Beside the namespace's pause, the worker marks the bucket paused in the queue's slot (its pool is not spent).
      await waitFor(() => thrownAt > 0, 20_000, 'an acme job thrown');
      const marks = `${bed().prefix}:retry-after::throttle:lpaused:*`;
      await waitFor(async () => (await bed().redis.keys(marks)).length === 1, pauseMs / 2, 'the queue\'s mark of the pause');
    }
    await waitFor(async () => (await queue.getCompletedCount()) === 40, 20_000, 'every job completed');
    expect(starts).toHaveLength(41);
    const acme = starts.filter((s) => s.data.customer === 'acme');
    const again = acme.find((s, i) => acme.findIndex((t) => t.id === s.id) !== i)!;
    // The pause is set a few ms after the throw (allowed: 50 ms), and nothing of the bucket is delivered after it
    // (processedOn: the delivery). In leased delivery the worker marks the bucket paused in the queue's slot too, so
    // its pool is not spent: before that, the job sent back was delivered again from the pool within ms of the
    // throw in about one run of three (an admin's pause still has that gap: the leased-only test below).
    expect(acme.filter((s) => s.processedOn > thrownAt + 50 && s.processedOn < thrownAt + pauseMs)).toEqual([]);
    // Sent back without an attempt made.
    expect(again.attemptsMade).toBe(0);
  });
});

/**
 * A bug, shown on the scripts themselves (not a contract test: it is about leased delivery's pools). A pause is kept in
 * the namespace's slot (lua/pauseThrottle-2.lua) and read only where room is counted: exact delivery's script and the
 * grantor (lua/leaseTokens-1.lua). Tokens a queue already holds in its pool for the bucket are spent by
 * lua/takeLeasedJobs-19.lua (includes/leasedRoom), which reads no namespace pause: for up to h after ThrottleAdmin.pause
 * the paused bucket's jobs are still delivered, against "its buckets deliver nothing from every worker's next delivery
 * call". A RetryAfterError no longer has that gap: its worker marks the bucket paused in the queue's own slot, which
 * the pool reads (the second test). It.failing: the first passes once a paused bucket's pooled tokens stop being spent
 * after an admin's pause (or are withdrawn when the pause is noticed).
 */
describe('leased delivery: a paused bucket\'s pooled tokens (known bug)', () => {
  /** A leased queue whose pool holds tokens of acme's bucket (h 10 s), and what its calls need; closed after `body`. */
  async function withPooledTokens(body: (pool: {
    bed: ContractBed;
    queueKeys: QueueThrottleKeys;
    member: string;
    leaseOne(): Promise<number>;
    deliver(token: string): Promise<unknown[]>;
  }) => Promise<void>): Promise<void> {
    const leased = MODES.find((m) => m.name === 'leased')!;
    const bed = new ContractBed('cpause-pool', leased);
    try {
      const queue = bed.queue('pooled');
      // A worker that never runs: it publishes the queue's config and the throttle's limits; this test makes the calls.
      const worker = bed.worker('pooled', null, { throttles: [Throttle.named('api-per-customer').key([Key.data('customer')]).limit(100, '1s')] });
      await worker.waitUntilReady();
      await queue.addBulk([1, 2, 3].map((i) => ({ name: 'call', data: { customer: 'acme', i } })));
      const keys = new ThrottleKeys(bed.prefix);
      const q = keys.queue('pooled');
      const runner = new ScriptRunner(bed.redis);
      const call = {
        bullmqKeys: new QueueKeys(bed.prefix).getKeys('pooled'), queueKeys: q, throttlePrefix: keys.throttlePrefix,
        // h of 10 s here, so that a slow machine cannot let the pool's token expire before the last call.
        lockDuration: 30_000, leaseMs: 10_000, workerName: '', gen: (await bed.redis.hget(q.state, 'gen'))!, durableRedis: false,
      };
      const first = await takeLeasedJobs(runner, { ...call, tokens: ['t0'] }, 10, 0, [], '');
      expect(first.reply.jobs).toEqual([]);
      const { member } = first.lease.wanted[0];
      const grantor = { runner, slotKey: keys.registryVersion, throttlePrefix: keys.throttlePrefix, confirmation: new ReplicaConfirmation(() => keys.grantorRecord) };
      const asker = { queueId: `${bed.prefix}:pooled`, leaseMs: 10_000, durableRedis: false, holder: 'test', holdMs: 30_000, credit: [], knownNodeId: '' };
      const lease = async (count: number, refill: boolean) => leaseTokens(grantor, asker, [{ member, buckets: bucketPartsOf(member), count, refill }]);
      const answer = await lease(3, true);
      expect(answer.results[0].granted).toBeGreaterThan(0);
      const deposit = { member, requestUs: first.reply.nowUs, grantUs: answer.grantUs, nonce: 'n', count: answer.results[0].granted, roomInMs: 0, lacking: '', refill: true };
      await takeLeasedJobs(runner, { ...call, tokens: [] }, 0, 0, [deposit], first.lease.node);
      await body({
        bed, queueKeys: q, member,
        leaseOne: async () => (await lease(1, false)).results[0].granted,
        deliver: async (token) => (await takeLeasedJobs(runner, { ...call, tokens: [token] }, 0, 0, [], first.lease.node)).reply.jobs,
      });
    } finally {
      await bed.close();
    }
  }

  it.failing('a bucket paused while its pool holds a token delivers nothing on the next delivery call', () => withPooledTokens(async ({ bed, leaseOne, deliver }) => {
    await bed.admin.pause('api-per-customer', { key: ['acme'] });
    // The grantor grants the paused bucket nothing...
    expect(await leaseOne()).toBe(0);
    // ...but the pool's token is spent on the next delivery call, within h of the pause.
    expect(await deliver('t1')).toEqual([]);
  }));

  it('a bucket a RetryAfterError of the queue paused spends none of its pool while the pause lasts (the queue\'s own mark)', () => withPooledTokens(async ({ bed, queueKeys, member, deliver }) => {
    // What ThrottledWorker writes beside the namespace's pause when a processor throws RetryAfterError (leased).
    const [bucketId] = bucketPartsOf(member);
    await bed.redis.set(queueKeys.leasedPause(bucketId), '1', 'PX', 60_000);
    expect(await deliver('t1')).toEqual([]);
    // The pool kept its tokens (they expire unspent, or are spent once the mark lapses with the pause).
    expect(await bed.redis.zcard(`${queueKeys.base}:lp:${bucketId}`)).toBeGreaterThan(0);
  }));
});

import { Job } from 'bullmq';
import { Key, Missing, Throttle } from '../../src';
import { waitFor } from '../support/bullmq';
import { ContractBed, describeEachMode, recordingProcessor, Start, useContractBed } from './contractSuite';

// Priority across buckets: among held jobs that fit, bullmq's order holds whatever their buckets. Held jobs are
// ordered priority * 2^32 + sequence (lua/includes/jobOrder.lua): priority 0 (none) before any priority, a lower
// number first, then queue order. A delivery call takes the least of the ready held jobs, the heads of the classes
// a due bucket woke (lua/includes/wakeDueBuckets.lua) and the first fresh job of wait, then prioritized
// (lua/includes/takeJobsBody.lua, includes/freshJobs.lua). Each test holds jobs of several buckets behind a filler
// each (one per W), in an order that disagrees with bullmq's (and their buckets' room comes back in an order that
// disagrees too), then occupies the worker's one slot with a gate job while every one of those buckets' room comes
// back, so that they all fit at the same moment: the starts after the gate must follow bullmq's order.
// The suite has no test clock for workers (test/support/testClock.ts steers only scripts a test runs itself), so
// the gate waits for the Redis clock to pass the windows; nothing asserts a wall-clock time.
//
// Known gaps: the tests made with `gap` below fail today and are skipped; PRIORITY_ACROSS_BUCKETS_GAPS=1 runs them.
//   - More than 64 buckets due at once (exact delivery), more than 8 (leased): a call wakes the 8 due first and, in
//     exact delivery, reads the first waiter of the next 56 due and delivers nothing ordered after the lowest
//     (lua/includes/wakeDueBuckets.lua). A class of a bucket past those is not looked at, whatever its priority
//     (70 buckets). Leased delivery reads no bound: a leased bucket may stay due with its room on its way, and the
//     bound then held the call back (with it, clusterThroughput's leased case with a keyed throttle stalled: 2,199
//     of 15,000 jobs, then none for 8 s); there the classes whose tokens come first go first (16 and 70 buckets,
//     unthrottled jobs beside held ones).
//   - A stream of jobs that need no token kept a held job waiting, in leased delivery, until the stream ended (4.8-6.0
//     s after its room came): a worker leased only when a call left a slot unserved. It now leases for held classes
//     at most every 100 ms while every slot is served (LeasedDelivery), and the last test passes in both modes. Two
//     fixes tried before were not kept: holding later jobs back until the tokens come (229 jobs/s on
//     clusterThroughput's keyed leased case: each customer's class waited for its own lease round), and leasing for
//     held classes with every slot busy on every call (under 65 jobs/s); the throttled one measured 5,599 jobs/s
//     there (5,961 and 5,335 in two runs without it).
//   - Jobs the worker classifies (a throttle keyed on Key.attribute, or any worker of the queue with `attributes`:
//     src/queueState/luaClassSpec.ts): the delivery call does not see jobs not classified yet (takeJobsBody.lua:
//     freshEnded = classSpec == nil), and a call that served its slot has them classified only in the background
//     (src/worker/slots/slotRequests.ts), so held jobs go before newer jobs of higher priority.
const gap = process.env.PRIORITY_ACROSS_BUCKETS_GAPS === '1' ? it : it.skip;
const W = 1_000;

interface Planned {
  name: string;
  /** data.k: the bucket (none: unthrottled). */
  k?: string;
  /** bullmq's priority; 0 or none: no priority. */
  priority?: number;
}

describeEachMode('contract: priority across buckets', (mode) => {
  const bed = useContractBed('cprio', mode);
  const perK = Throttle.named('per-k').key([Key.data('k')]).whenKeyMissing(Missing.Unthrottled).limit(1, W);
  /** The same, keyed on an attribute the worker computes (its jobs are classified by the worker, not in Lua). */
  const perAttr = Throttle.named('per-attr').key([Key.attribute('k')]).whenKeyMissing(Missing.Unthrottled).limit(1, W);
  const jobOf = ({ name, k, priority }: Planned) => ({ name, data: k === undefined ? {} : { k }, opts: priority ? { priority } : {} });

  /**
   * One worker with one slot. `fill` keys each get a filler job, delivered in that order (each bucket full for W
   * from then); the `held` jobs are added one at a time, each waited for until it is held (so they are held, and
   * sequenced, in that order), or all at once with `heldTogether` (sequenced as bullmq orders them); then a gate job takes the slot, the `fresh` jobs are added (they wait in bullmq's
   * wait and prioritized, looked at by nobody), and once every filler's window (and h) has passed the gate opens.
   * Returns the names of the jobs that started after the gate, in order.
   */
  async function startsAfterGate(queueName: string, plan: { fill: string[]; held: Planned[]; fresh?: Planned[]; heldTogether?: boolean; byAttribute?: boolean; windowMs?: number }): Promise<string[]> {
    // Many fillers take a while to go one by one (on a loaded machine, more than W): their buckets must still be
    // full when the held jobs come.
    const windowMs = plan.windowMs ?? W;
    const keyed = windowMs === W ? perK : Throttle.named('per-k').key([Key.data('k')]).whenKeyMissing(Missing.Unthrottled).limit(1, windowMs);
    const contract: ContractBed = bed();
    const queue = contract.queue(queueName);
    const starts: Start[] = [];
    let openGate!: () => void;
    const gateOpen = new Promise<void>((resolve) => { openGate = resolve; });
    contract.worker(queueName, recordingProcessor(starts, async (job: Job) => {
      if (job.name === 'gate') await gateOpen;
    }), plan.byAttribute
      ? { concurrency: 1, throttles: [perAttr], attributes: (job) => ({ k: (job.data as { k?: string }).k }) }
      : { concurrency: 1, throttles: [keyed] });
    try {
      await queue.addBulk(plan.fill.map((k) => jobOf({ name: `fill-${k}`, k })));
      await waitFor(() => starts.length === plan.fill.length, 20_000, 'every filler started');
      expect(starts.map((s) => s.name)).toEqual(plan.fill.map((k) => `fill-${k}`));
      if (plan.heldTogether) {
        const added = await queue.addBulk(plan.held.map(jobOf));
        for (const job of added) await waitFor(async () => (await contract.admin.explainJob(queueName, job.id!)).state === 'held', 10_000, `${job.name} held`);
      }
      for (const job of plan.heldTogether ? [] : plan.held) {
        const added = await queue.add(job.name, jobOf(job).data, jobOf(job).opts);
        await waitFor(async () => (await contract.admin.explainJob(queueName, added.id!)).state === 'held', 10_000, `${job.name} held`);
      }
      await queue.add('gate', {});
      await waitFor(() => starts.some((s) => s.name === 'gate'), 10_000, 'the gate started');
      if (plan.fresh) await queue.addBulk(plan.fresh.map(jobOf));
      // Room in every filler's bucket: W after its delivery (leased delivery: W + h after its grant, before that).
      const roomAt = Math.max(...starts.filter((s) => s.name.startsWith('fill-')).map((s) => s.processedOn)) + windowMs + mode.hMs + 250;
      await waitFor(async () => (await contract.redisNowMs()) >= roomAt, 20_000, 'every filler\'s window passed');
      // Nothing went while the gate held the slot: the held jobs are still held, the fresh ones still bullmq's.
      expect(starts.map((s) => s.name)).toEqual([...plan.fill.map((k) => `fill-${k}`), 'gate']);
      expect((await queue.getJobCounts('wait', 'prioritized')) as Record<string, number>).toEqual({
        wait: (plan.fresh ?? []).filter((j) => !j.priority).length,
        prioritized: (plan.fresh ?? []).filter((j) => j.priority).length,
      });
      const expected = plan.fill.length + 1 + plan.held.length + (plan.fresh ?? []).length;
      openGate();
      await waitFor(() => starts.length === expected, 20_000, 'every job started');
      return starts.slice(plan.fill.length + 1).map((s) => s.name);
    } finally {
      openGate();
    }
  }

  it('a held job of priority 1 goes before one of priority 10 of another bucket, and no priority before both', async () => {
    // a10 is held first and its bucket has room first; c0 (no priority) is held last and its bucket has room last.
    const order = await startsAfterGate('priorities', {
      fill: ['a', 'b', 'c'],
      held: [{ name: 'a10', k: 'a', priority: 10 }, { name: 'b1', k: 'b', priority: 1 }, { name: 'c0', k: 'c' }],
    });
    expect(order).toEqual(['c0', 'b1', 'a10']);
  });

  it.each([0, 5])('held jobs of one priority (%i) across buckets go in queue order, whichever bucket had room first', async (priority) => {
    // Held in the order a, b, c; their buckets' room returns in the order c, b, a.
    const order = await startsAfterGate(`same-${priority}`, {
      fill: ['c', 'b', 'a'],
      held: ['a', 'b', 'c'].map((k) => ({ name: `${k}${priority}`, k, priority })),
    });
    expect(order).toEqual(['a', 'b', 'c'].map((k) => `${k}${priority}`));
  });

  it('fresh jobs (never held) and held ones of other buckets go together in bullmq\'s order', async () => {
    // Held: a10 then b1. Fresh, added after both were held, in this order: d10 (after a10 in queue order), c5,
    // e12, and f (no priority: bullmq's wait, ahead of every prioritized job). Every bucket has room at the gate.
    const order = await startsAfterGate('fresh-and-held', {
      fill: ['a', 'b'],
      held: [{ name: 'a10', k: 'a', priority: 10 }, { name: 'b1', k: 'b', priority: 1 }],
      fresh: [{ name: 'd10', k: 'd', priority: 10 }, { name: 'c5', k: 'c', priority: 5 }, { name: 'e12', k: 'e', priority: 12 }, { name: 'f', k: 'f' }],
    });
    expect(order).toEqual(['f', 'b1', 'c5', 'a10', 'd10', 'e12']);
  });

  it('eight buckets come due at once: the priority 1 job of the bucket due last goes first, then queue order', async () => {
    const keys = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8'];
    const order = await startsAfterGate('eight', {
      fill: keys, heldTogether: true,
      held: keys.map((k) => (k === 'k8' ? { name: 'k8-1', k, priority: 1 } : { name: `${k}-10`, k, priority: 10 })),
    });
    expect(order).toEqual(['k8-1', 'k1-10', 'k2-10', 'k3-10', 'k4-10', 'k5-10', 'k6-10', 'k7-10']);
  });

  // A call wakes the 8 buckets due first and reads the first waiter of the next 56 (includes/wakeDueBuckets): it
  // delivers nothing ordered after the lowest of those, and calls again. Gaps: past 64 buckets due at once (k70's
  // class is not read; k01-10 went before k70-1 in 2 of 2 runs), and leased delivery, where the classes whose
  // tokens came first go first (a leased bucket may stay due with its room on its way).
  async function manyDueAtOnce(count: number): Promise<void> {
    const keys = Array.from({ length: count }, (_, i) => `k${String(i + 1).padStart(2, '0')}`);
    const last = keys[keys.length - 1];
    const order = await startsAfterGate(`many-${count}`, {
      fill: keys, heldTogether: true, windowMs: count > 16 ? 5 * W : W,
      held: keys.map((k) => (k === last ? { name: `${k}-1`, k, priority: 1 } : { name: `${k}-10`, k, priority: 10 })),
    });
    expect(order).toEqual([`${last}-1`, ...keys.slice(0, count - 1).map((k) => `${k}-10`)]);
  }

  it('more buckets due than a call wakes, then new jobs that come after them: every job starts, none left in active', async () => {
    // Ten buckets come due at once while the worker is paused: its first call wakes 8 (their held jobs go) and
    // reads the other two's first waiters; the new jobs, ordered after those, wait for the next call.
    const contract = bed();
    const queue = contract.queue('due-then-new');
    const starts: Start[] = [];
    const worker = contract.worker('due-then-new', recordingProcessor(starts), { concurrency: 20, throttles: [perK] });
    const keys = Array.from({ length: 10 }, (_, i) => `k${String(i + 1).padStart(2, '0')}`);
    await queue.addBulk(keys.map((k) => jobOf({ name: `fill-${k}`, k })));
    await waitFor(() => starts.length === keys.length, 20_000, 'every filler started');
    const held = await queue.addBulk(keys.map((k) => jobOf({ name: `${k}-held`, k })));
    for (const job of held) await waitFor(async () => (await contract.admin.explainJob('due-then-new', job.id!)).state === 'held', 10_000, `${job.name} held`);
    await worker.pause();
    await queue.addBulk([jobOf({ name: 'u1' }), jobOf({ name: 'u2' })]);
    const roomAt = Math.max(...starts.map((s) => s.processedOn)) + W + mode.hMs + 250;
    await waitFor(async () => (await contract.redisNowMs()) >= roomAt, 20_000, 'every filler\'s window passed');
    worker.resume();
    // A new job taken into active and then held back by the bound would wait there for bullmq's stalled check (30 s).
    await waitFor(() => starts.length === 2 * keys.length + 2, 10_000, 'every job started');
    if (mode.name === 'exact') expect(starts.slice(-2).map((s) => s.name).sort()).toEqual(['u1', 'u2']);
  }, 60_000);

  (mode.name === 'leased' ? gap : it)('16 buckets come due at once: the priority 1 job of the bucket due last goes first, then queue order', async () => {
    await manyDueAtOnce(16);
  });

  gap('70 buckets come due at once: the priority 1 job of the bucket due last goes first, then queue order', async () => {
    await manyDueAtOnce(70);
  });

  // Leased delivery (a gap): [u, u5, a0, b3] in 3 of 3 runs.
  (mode.name === 'leased' ? gap : it)('unthrottled fresh jobs and held jobs whose buckets have room go in bullmq\'s order', async () => {
    // Held: a0 (no priority) then b3. Fresh, after both: u5, then u (no priority); neither draws from a bucket.
    const order = await startsAfterGate('unthrottled', {
      fill: ['a', 'b'],
      held: [{ name: 'a0', k: 'a' }, { name: 'b3', k: 'b', priority: 3 }],
      fresh: [{ name: 'u5', priority: 5 }, { name: 'u' }],
    });
    expect(order).toEqual(['a0', 'u', 'b3', 'u5']);
  });

  // Gap (both modes): [b1, a10, f, c5, d10, e12] in 3 of 3 runs of each: the held jobs go before f and c5, which
  // wait unclassified in bullmq's lists (the classification the first call starts has not placed them by the second).
  gap('keyed on a worker-computed attribute: fresh jobs and held ones go together in bullmq\'s order', async () => {
    const order = await startsAfterGate('by-attribute', {
      fill: ['a', 'b'], byAttribute: true,
      held: [{ name: 'a10', k: 'a', priority: 10 }, { name: 'b1', k: 'b', priority: 1 }],
      fresh: [{ name: 'd10', k: 'd', priority: 10 }, { name: 'c5', k: 'c', priority: 5 }, { name: 'e12', k: 'e', priority: 12 }, { name: 'f', k: 'f' }],
    });
    expect(order).toEqual(['f', 'b1', 'c5', 'a10', 'd10', 'e12']);
  });

  /**
   * One slot; a filler of bucket a, then a1 held behind it; jobs named u... (of no bucket) run `unthrottledMs` each.
   * Returns the bed, the queue (the test adds the u jobs) and the starts.
   */
  async function heldBehindFiller(queueName: string, unthrottledMs: number) {
    const contract = bed();
    const queue = contract.queue(queueName);
    const starts: Start[] = [];
    contract.worker(queueName, recordingProcessor(starts, async (job: Job) => {
      if (job.name.startsWith('u')) await new Promise((resolve) => setTimeout(resolve, unthrottledMs));
    }), { concurrency: 1, throttles: [perK] });
    await queue.add('fill', { k: 'a' });
    await waitFor(() => starts.length === 1, 10_000, 'the filler started');
    await queue.add('a1', { k: 'a' });
    return { contract, queue, starts };
  }

  // About 1.1 s after the filler, W after it (leased delivery: within a lease round of 100 ms or so more).
  it('a held job whose room has come goes before later jobs that keep coming and need no token', async () => {
    const { queue, starts } = await heldBehindFiller('stream', 20);
    // Jobs of no bucket, added faster than the one slot runs them, for twice W: the slot never lacks a job.
    const streamUntil = Date.now() + 2 * W;
    let added = 0;
    while (Date.now() < streamUntil) {
      await queue.add(`u${added++}`, {});
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await waitFor(() => starts.some((s) => s.name === 'a1'), 30_000, 'a1 started');
    const a1 = starts.findIndex((s) => s.name === 'a1');
    // a1's room came W after the filler, with half the stream still to come: that half goes after it.
    expect(added - (a1 - 1)).toBeGreaterThanOrEqual(5);
  }, 40_000);

  // Leased delivery only: tokens leased for a held job while every slot is busy must be spent within h, or they use up
  // the throttle's allowance for nothing. With slots coming free less often than that, none is leased for it.
  (mode.name === 'leased' ? it : it.skip)('slow jobs that need no token keep every slot busy: no tokens leased for a held job expire unspent', async () => {
    const { contract, queue, starts } = await heldBehindFiller('slow-stream', 300);
    // Eight jobs of 300 ms, one slot: a delivery call every 300 ms, each serving the slot, for 2.4 s (a1's room
    // comes after 1 s).
    await queue.addBulk(Array.from({ length: 8 }, (_, i) => ({ name: `u${i}`, data: {} })));
    await waitFor(() => starts.some((s) => s.name === 'a1'), 30_000, 'a1 started');
    const stats = await contract.admin.throttleStats('per-k');
    expect(stats.tokensExpired).toBe(0);
  }, 40_000);
});

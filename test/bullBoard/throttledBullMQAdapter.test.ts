import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { getThrottledCount, Key, Throttle } from '../../src';
import { ThrottledBullMQAdapter } from '../../src/bullBoard';
import { newRedis } from '../support/redis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

const CUSTOMERS = ['acme', 'globex', 'initech'];
const PER_CUSTOMER = 10;
const HELD = CUSTOMERS.length * (PER_CUSTOMER - 1);
const PLAIN_WAITING = 5;
const PAGE = 10;

/** The name Bull Board renders: its formatJob serializes the job with toJSON(). */
const shownName = (job: Job) => (job.toJSON() as { name: string }).name;

// The adapter against a real Redis: 30 jobs of 3 customers under 1 per minute per customer, 27 held in three
// classes, beside 5 jobs bullmq keeps waiting (the queue paused), counted and paged as one waiting list.
describe('ThrottledBullMQAdapter', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  let adapter: ThrottledBullMQAdapter;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('bullboard');
  });
  afterEach(async () => {
    await adapter?.close();
    await bed.close(redis);
    await redis.quit();
  });

  it('counts held jobs as waiting, pages bullmq\'s waiting jobs then the held ones, and names the bucket holding each', async () => {
    const queue = bed.queue('payments');
    const delivered: string[] = [];
    const perCustomer = Throttle.named('stripe-per-customer').key([Key.data('customer')]).limit(1, '1m');
    const worker = bed.worker('payments', async (job: Job) => { delivered.push(job.id!); }, { concurrency: 3, throttles: [perCustomer] });
    const charges = await queue.addBulk(Array.from({ length: CUSTOMERS.length * PER_CUSTOMER }, (_, i) => ({
      name: 'charge', data: { customer: CUSTOMERS[i % CUSTOMERS.length], n: i },
    })));
    await waitFor(() => delivered.length === CUSTOMERS.length, 20_000, 'one charge of each customer delivered');
    await waitFor(async () => (await getThrottledCount(queue)).held === HELD && (await getThrottledCount(queue)).classifying === 0, 20_000, 'the others held');
    // With its only worker paused, new jobs stay in bullmq's own wait: the throttle layer takes none of them. (Not
    // queue.pause(): bullmq 5 keeps a paused queue's jobs in a list of their own, which Bull Board shows as paused.)
    await worker.pause();
    const refunds = await queue.addBulk(Array.from({ length: PLAIN_WAITING }, (_, i) => ({ name: 'refund', data: { customer: 'acme', n: i } })));
    expect(await queue.getJobCountByTypes('waiting')).toBe(PLAIN_WAITING);

    adapter = new ThrottledBullMQAdapter(queue);
    const plain = new BullMQAdapter(queue);
    expect((await plain.getJobCounts()).waiting).toBe(PLAIN_WAITING);
    const counts = await adapter.getJobCounts();
    expect(counts.waiting).toBe(PLAIN_WAITING + HELD);
    expect(counts.completed).toBe(CUSTOMERS.length);

    // Bull Board's pages of the waiting tab: start..end of 10 each.
    const pages: Job[][] = [];
    for (let start = 0; start < counts.waiting!; start += PAGE) pages.push(await adapter.getJobs(['waiting'], start, start + PAGE - 1));
    expect(pages.map((page) => page.length)).toEqual([10, 10, 10, 2]);
    const listed = pages.flat();
    const heldIds = charges.map((job) => job.id!).filter((id) => !delivered.includes(id));
    expect(listed.slice(0, PLAIN_WAITING).map((job) => job.id).sort()).toEqual(refunds.map((job) => job.id).sort());
    expect(listed.slice(0, PLAIN_WAITING).map(shownName)).toEqual(Array(PLAIN_WAITING).fill('refund'));
    expect(listed.slice(PLAIN_WAITING).map((job) => job.id).sort()).toEqual([...heldIds].sort());
    // Each held job named with its own customer's bucket; the job itself (and Redis) keep the name.
    for (const job of listed.slice(PLAIN_WAITING)) {
      expect(shownName(job)).toBe(`charge · held by stripe-per-customer[${job.data.customer}]`);
      expect(job.name).toBe('charge');
      expect(Object.keys(job.toJSON())).not.toContain('toJSON');
    }
    expect(await redis.hget(`${bed.prefix}:payments:${heldIds[0]}`, 'name')).toBe('charge');
    // Classes in order of their first job; within one, queue order.
    const customersInOrder = listed.slice(PLAIN_WAITING).map((job) => job.data.customer as string);
    expect(customersInOrder).toEqual([...customersInOrder].sort((a, b) => CUSTOMERS.indexOf(a) - CUSTOMERS.indexOf(b)));
    const acmeOrder = listed.slice(PLAIN_WAITING).filter((job) => job.data.customer === 'acme').map((job) => job.data.n as number);
    expect(acmeOrder).toEqual([...acmeOrder].sort((a, b) => a - b));

    // Ranges past the end, to the end, and a page of held jobs only.
    expect(await adapter.getJobs(['waiting'], 40, 49)).toEqual([]);
    expect((await adapter.getJobs(['waiting'])).length).toBe(PLAIN_WAITING + HELD);
    expect((await adapter.getJobs(['waiting'], 12, 14)).map((job) => job.id)).toEqual(listed.slice(12, 15).map((job) => job.id));

    // The "latest" tab asks for every status at once, each ranged on its own.
    const latest = await adapter.getJobs(adapter.getJobStatuses(), 0, PAGE - 1);
    expect(latest.filter((job) => job.id !== undefined && delivered.includes(job.id)).length).toBe(CUSTOMERS.length);
    expect(latest.filter((job) => shownName(job).includes(' · held')).length).toBe(PAGE - PLAIN_WAITING);
    expect(latest.filter((job) => shownName(job) === 'refund').length).toBe(PLAIN_WAITING);

    // A held job opened on its own: named the same, its logs say why; a delivered one is as bullmq has it.
    const held = await adapter.getJob(heldIds[0]);
    expect(shownName(held!)).toBe(`charge · held by stripe-per-customer[${held!.data.customer}]`);
    const logs = await adapter.getJobLogs(heldIds[0]);
    expect(logs[0]).toMatch(new RegExp(`^\\[bullmq-throttle, not stored in the job\\] held, waiting: stripe-per-customer \\[${held!.data.customer}\\] is full \\(1/1 per 1m\\); room returns in (\\d+(\\.\\d)?s|1m); first in line there$`));
    const done = await adapter.getJob(delivered[0]);
    expect(shownName(done!)).toBe('charge');
    expect(await adapter.getJobLogs(delivered[0])).toEqual([]);
    expect(await adapter.getJob('no-such-job')).toBeUndefined();

    // A held job removed from the board stops counting and stops being listed.
    await held!.remove();
    expect((await adapter.getJobCounts()).waiting).toBe(PLAIN_WAITING + HELD - 1);
    expect((await adapter.getJobs(['waiting'])).map((job) => job.id)).not.toContain(heldIds[0]);
  });
});

import { bucketsOfTicket, deadlineOf, lateExactReturns } from '../../src/delivery/lateStartTickets';

// The tickets lua/includes/exactRoom.lua writes for each delivered job (what counted it, to give back when its
// processor would start too late), read back.
describe('late-start tickets', () => {
  it('a bucket counted with its own lease says so after its windows ("~<ms>"), and is given back with it', () => {
    // Both buckets far from full: api's lease is 250 ms, the missing-key bucket '~' of a 100 ms window's is
    // 100 ms; the job's deadline is the lesser.
    const ticket = '100#api=$1@1000~250|per%20customer=~$2@100~100';
    const { deadlineMs, buckets } = deadlineOf(ticket);
    expect(deadlineMs).toBe(100);
    expect(bucketsOfTicket(buckets)).toEqual([
      { bucketId: 'api=', name: 'api', bucket: '', cost: 1, windows: [1000], grants: [], leaseMs: 250 },
      { bucketId: 'per%20customer=~', name: 'per customer', bucket: '~', cost: 2, windows: [100], grants: [], leaseMs: 100 },
    ]);
    const returns = lateExactReturns({ jobId: '7', hMs: 20, deadlineMs: 100, grantUs: 5_000_000, ticket: buckets, repliedAt: 0 });
    expect(returns.map((r) => ({ name: r.name, bucket: r.bucket, leaseMs: r.leaseMs, count: r.count, windows: r.windows }))).toEqual([
      { name: 'api', bucket: '', leaseMs: 250, count: 1, windows: [1000] },
      { name: 'per customer', bucket: '~', leaseMs: 100, count: 2, windows: [100] },
    ]);
    // Without "~", the call's h.
    expect(lateExactReturns({ jobId: '8', hMs: 20, deadlineMs: 20, grantUs: 5_000_000, ticket: 'api=$1@1000', repliedAt: 0 })[0].leaseMs).toBe(20);
  });

  it('a ticket without a deadline of its own keeps the call\'s h', () => {
    expect(deadlineOf('api=$1@1000')).toEqual({ buckets: 'api=$1@1000' });
  });
});

import { Missing } from '../../src/declarations/Missing';
import { DeliveryMemory } from '../../src/worker/recovery/deliveryMemory';
import type { RegistryEntry } from '../../src/queueState/registryEntry';

// What a worker remembers of its deliveries for a workers' gather (src/worker/recovery/deliveryMemory.ts): plain
// bookkeeping on this process's clock, fed by delivery tickets; the gather itself runs against Redis in
// test/faults/recoveryFromWorkers.test.ts.
describe('DeliveryMemory', () => {
  it('remembers each bucket\'s deliveries by cost for its longest window, and reports them as recent as they could be', () => {
    const memory = new DeliveryMemory('me');
    // A job counted in two windows of api (cost 2) and by a rate with a 40 ms deadline in partner.
    memory.noteDeliveries(['40#api=-$2@1000,60000|partner=sacme$1@'], 1_000);
    memory.noteDeliveries(['api=-$1@1000,60000', ''], 30_000);
    const report = memory.report('api:60000', 31_000);
    expect(report.declared).toBe('api:60000');
    // partner counted no window: a rate is not counted again from memory.
    expect(report.buckets.map(([id]) => id)).toEqual(['api=-']);
    const slots = report.buckets[0][1];
    expect(slots.map(([, count]) => count)).toEqual([2, 1]);
    // Slots are 60000/64 ms wide; ago runs from each slot's end.
    const slotMs = Math.ceil(60_000 / 64);
    expect(slots[0][0]).toBe((31_000 - Math.floor(1_000 / slotMs) * slotMs - slotMs) * 1000);
  });

  it('forgets a delivery put back for starting late: it never started, and its tokens went back', () => {
    const memory = new DeliveryMemory('me');
    memory.noteDeliveries(['api=-$2@1000,60000', 'api=-$1@1000,60000'], 1_000);
    memory.forget('api=-$2@1000,60000', 1_000);
    expect(memory.report('', 1_500).buckets[0][1].map(([, count]) => count)).toEqual([1]);
    memory.forget('api=-$1@1000,60000', 1_000);
    expect(memory.report('', 1_500).buckets).toHaveLength(0);
  });

  it('reports the longest lease its deliveries were counted with: a bucket far from full\'s, or the call\'s h', () => {
    const memory = new DeliveryMemory('me');
    expect(memory.report('', 0).leaseMs).toBe(0);
    memory.noteDeliveries(['api=-$1@1000'], 0, 20);
    expect(memory.report('', 10).leaseMs).toBe(20);
    memory.noteDeliveries(['api=-$1@60000~250*1:2'], 10, 20);
    expect(memory.report('', 20).leaseMs).toBe(250);
    // Never lowered: the node's record of it may be gone with the counts.
    memory.noteDeliveries(['api=-$1@1000'], 30, 15);
    expect(memory.report('', 40).leaseMs).toBe(250);
  });

  it('forgets what left the longest window', () => {
    const memory = new DeliveryMemory('me');
    memory.noteDeliveries(['api=-$1@1000'], 0);
    expect(memory.report('', 500).buckets).toHaveLength(1);
    expect(memory.report('', 5_000).buckets).toHaveLength(0);
  });

  it('names the exact workers (by id) and leased queues (prefix:queue) it saw alive within their throttles\' longest window, not itself', () => {
    const memory = new DeliveryMemory('me');
    const entry = (workerId: string, windowMs: number, delivery: 'exact' | 'leased' = 'exact'): RegistryEntry => ({
      workerId, queue: 'q', prefix: 'bull', delivery,
      declarations: [{ name: 'a:b', limits: [{ max: 1, windowMs }], keyParts: undefined, missing: Missing.SharedBucket }],
    });
    memory.notePeers([entry('me', 1_000), entry('short', 1_000), entry('long', 60_000), entry('leased', 60_000, 'leased')], 0);
    // A gather waits for each, whichever kind reports (lua/reportDeliveries-1.lua, lua/reportQueueHistory-1.lua).
    expect(memory.report('', 500).peers).toEqual([['short', 'a%3Ab:1000'], ['long', 'a%3Ab:60000'], ['bull:q', 'a%3Ab:60000']]);
    expect(memory.report('', 5_000).peers).toEqual([['long', 'a%3Ab:60000'], ['bull:q', 'a%3Ab:60000']]);
    expect(memory.seenAlive(5_000)).toEqual(memory.report('', 5_000).peers);
  });
});

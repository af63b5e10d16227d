import { GrantMemory } from '../src/grant/grantMemory';
import { Throttle } from '../src';

// What a Grantor remembers of its grants for a gather (src/grant/grantMemory.ts): plain bookkeeping on this
// process's clock; the gather itself runs against Redis in test/faults/grantorApiRestart.test.ts.
describe('GrantMemory', () => {
  it('names every throttle granted in with its longest span, and how long a grant made now may count', () => {
    const memory = new GrantMemory(25);
    expect(memory.declared).toBe('');
    memory.noteThrottle(Throttle.named('api').limit(5, '1s').limit(100, '1m'));
    memory.noteThrottle(Throttle.named('per:tenant').rate(10, '1s', { burst: 20 }));
    memory.noteThrottle(Throttle.named('api').limit(5, '1s').limit(100, '1m'));
    // A rate's span is the time its burst takes to fill; names are encoded as keys spell them.
    expect(memory.declared).toBe('api:60000,per%3Atenant:2000');
    expect(memory.countsForMs).toBe(60_025);
  });

  it('reports each window counter\'s grants by cost, as recent as they could be, until they left window and h', () => {
    const memory = new GrantMemory(10);
    memory.noteGrant([{ bucketId: 'api=-', max: 5, windowMs: 1000, cost: 2 }, { bucketId: 'api=-', max: 100, windowMs: 60_000, cost: 2 }], 1_000);
    memory.noteGrant([{ bucketId: 'api=-', max: 5, windowMs: 1000, cost: 1 }], 1_500);
    const report = memory.report(1_600);
    expect(report.map(({ bucketId, max, windowMs }) => [bucketId, max, windowMs])).toEqual([['api=-', 5, 1000], ['api=-', 100, 60_000]]);
    const second = report[0].slots;
    expect(second.map(([, count]) => count)).toEqual([2, 1]);
    // Slots are (1000 + 10) / 64 ms wide, rounded up; ago runs from each slot's end.
    const slotMs = Math.ceil(1_010 / 64);
    expect(second[1][0]).toBe((1_600 - Math.floor(1_500 / slotMs) * slotMs - slotMs) * 1000);
    // Past the 1 s window and h, only the minute's counter is left.
    expect(memory.report(2_600).map(({ windowMs }) => windowMs)).toEqual([60_000]);
    expect(memory.report(70_000)).toEqual([]);
  });
});

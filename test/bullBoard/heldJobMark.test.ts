import { markedName } from '../../src/bullBoard';
import { waitingOn } from '../../src/bullBoard/heldJobs';
import { splitWaitingRange } from '../../src/bullBoard/waitingRange';

// How a held job is named in Bull Board, from the bucket id its class waits on (class-state), and how a waiting
// page splits between bullmq's waiting jobs and the held ones.
describe('held job names', () => {
  it('names the bucket: keyed, composite, unkeyed, missing key, a segment it cannot read; and jobs not waiting', () => {
    expect(markedName('charge', waitingOn('stripe-per-customer=sacme'))).toBe('charge · held by stripe-per-customer[acme]');
    expect(markedName('send', waitingOn('per%20tenant=sa%20b,n7,t'))).toBe('send · held by per tenant[a b, 7, true]');
    expect(markedName('charge', waitingOn('stripe=-'))).toBe('charge · held by stripe');
    expect(markedName('charge', waitingOn('stripe=~'))).toBe('charge · held by stripe[missing key]');
    expect(markedName('charge', waitingOn('stripe=x9'))).toBe('charge · held by stripe[x9]');
    expect(markedName('', waitingOn('stripe=-'))).toBe('held by stripe');
    expect(markedName('charge', { kind: 'ready' })).toBe('charge · held, ready to go');
    expect(markedName('charge', { kind: 'classifying' })).toBe('charge · held, being classified');
  });
});

describe('splitWaitingRange', () => {
  it('pages bullmq\'s waiting jobs first, then the held ones', () => {
    expect(splitWaitingRange(5, 0, 9)).toEqual({ waiting: { start: 0, end: 4 }, held: { start: 0, end: 4 } });
    expect(splitWaitingRange(5, 10, 19)).toEqual({ waiting: null, held: { start: 5, end: 14 } });
    expect(splitWaitingRange(25, 10, 19)).toEqual({ waiting: { start: 10, end: 19 }, held: null });
    expect(splitWaitingRange(20, 10, 19)).toEqual({ waiting: { start: 10, end: 19 }, held: null });
    expect(splitWaitingRange(0, 0, 9)).toEqual({ waiting: null, held: { start: 0, end: 9 } });
    expect(splitWaitingRange(3)).toEqual({ waiting: { start: 0, end: 2 }, held: { start: 0, end: -1 } });
  });
});

import fc from 'fast-check';
import { leaseTokensCall, leaseTokensRequestsOf } from '../../src/lua/calls/leaseTokens';

// Instruments that watch the calls sent (benchmarks/support/clientCalls.ts) read a leaseTokens call's requests back
// from its ARGV: what leaseTokensCall wrote, whatever the credit and requests.
describe('leaseTokensRequestsOf', () => {
  it('reads back the requests leaseTokensCall wrote', () => {
    const bucket = fc.tuple(fc.constantFrom('all', 'per%2Dcustomer'), fc.string({ minLength: 0, maxLength: 6 }), fc.constantFrom('', '$3', '$20'))
      .map(([throttle, value, cost]) => `${throttle}=${encodeURIComponent(value)}${cost}`);
    const request = fc.record({ count: fc.integer({ min: 1, max: 500 }), refill: fc.boolean(), buckets: fc.array(bucket, { minLength: 1, maxLength: 4 }) });
    const credit = fc.array(fc.tuple(bucket, fc.integer({ min: 1, max: 9 })), { maxLength: 3 });
    fc.assert(fc.property(fc.array(request, { maxLength: 5 }), credit, (requests, units) => {
      const call = leaseTokensCall({
        slot: '{ns}:v', throttlePrefix: '{ns}:t', leaseMs: 100, queueId: 'p:q', durableRedis: false, holder: 'w1', holdMs: 30_000,
        knownNodeId: '', credit: units, requests,
      });
      expect(leaseTokensRequestsOf(call.args)).toEqual(requests);
    }));
  });
});

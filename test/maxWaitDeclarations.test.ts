import { Grantor } from '../src/grant/Grantor';
import { Throttle } from '../src/declarations/Throttle';
import { mergeDeclarations } from '../src/declarations/mergeDeclarations';
import { InvalidThrottleError } from '../src/errors/InvalidThrottleError';
import { ThrottleWaitTimeoutError } from '../src/errors/ThrottleWaitTimeoutError';
import { UnrecoverableError } from 'bullmq';
import { declarationData } from '../src/worker/declarations/declarationRegistry';
import { deleteKeysUnder, newRedis, uniquePrefix } from './support/redis';

describe('maxWait(duration)', () => {
  it('declares the longest wait, travels through the registry, and merges to the shortest', () => {
    const stripe = Throttle.named('stripe').limit(100, '1s').maxWait('10m');
    expect(stripe.maxWaitMs).toBe(600_000);
    expect(JSON.parse(JSON.stringify(declarationData(stripe))).maxWaitMs).toBe(600_000);
    expect(mergeDeclarations([stripe, Throttle.named('stripe').limit(100, '1s').maxWait(30_000)]).maxWaitMs).toBe(30_000);
    expect(mergeDeclarations([stripe, Throttle.named('stripe').limit(100, '1s')]).maxWaitMs).toBe(600_000);
    expect(mergeDeclarations([Throttle.named('stripe').limit(100, '1s')]).maxWaitMs).toBeUndefined();
  });

  it('rejects a duration that does not parse, is under 1 ms, or a second maxWait', () => {
    expect(() => Throttle.named('t').limit(1, '1s').maxWait('10 min' as never)).toThrow(InvalidThrottleError);
    expect(() => Throttle.named('t').limit(1, '1s').maxWait(0)).toThrow(/maxWait\(0\)/);
    expect(() => Throttle.named('t').limit(1, '1s').maxWait('1s').maxWait('2s')).toThrow(/maxWait\(\) is declared twice/);
  });

  it('ThrottleWaitTimeoutError is unrecoverable and names the throttle, its bucket and the wait', () => {
    const atOnce = new ThrottleWaitTimeoutError('7', 'per%3Acustomer|sacme|would|12000|3000');
    expect(atOnce).toBeInstanceOf(UnrecoverableError);
    expect(atOnce).toMatchObject({ name: 'ThrottleWaitTimeoutError', throttle: 'per:customer', bucket: 'sacme', kind: 'estimate', waitMs: 12_000, maxWaitMs: 3000 });
    expect(atOnce.message).toBe('job 7 would wait about 12000 ms in throttle \'per:customer\' (bucket ["acme"]) by its backlog and limits, longer than its maxWait of 3000 ms: failed at once');
    const waited = new ThrottleWaitTimeoutError('8', 'stripe|-|waited|3001|3000');
    expect(waited).toMatchObject({ kind: 'waited', waitMs: 3001 });
  });

  it('Grantor.wait stops at the shortest maxWait of its throttles when given none: at once when the room comes later', async () => {
    const redis = newRedis();
    const prefix = uniquePrefix('maxwait-grantor');
    const grantor = new Grantor({ connection: redis, prefix });
    try {
      const api = Throttle.named('api').limit(1, '10s').maxWait(300);
      expect((await grantor.wait([{ throttle: api }])).granted).toBe(true);
      const before = Date.now();
      const refused = await grantor.wait([{ throttle: api }]);
      expect(refused.granted).toBe(false);
      // The room is 10 s away, past the 300 ms: refused at once, not after sleeping.
      expect(Date.now() - before).toBeLessThan(300);
    } finally {
      await grantor.close();
      await deleteKeysUnder(redis, prefix);
      await redis.quit();
    }
  });
});

import { Throttle } from '../src/declarations/Throttle';
import { mergeDeclarations } from '../src/declarations/mergeDeclarations';
import { InvalidThrottleError } from '../src/errors/InvalidThrottleError';
import { effectiveThrottle } from '../src/queueState/queueConfig';
import type { RegistryEntry } from '../src/queueState/registryEntry';
import { declarationData } from '../src/worker/declarations/declarationRegistry';
import { Grantor, InvalidGrantError } from '../src';
import { newRedis, uniquePrefix } from './support/redis';

describe('concurrency(n)', () => {
  it('declares the most jobs of a bucket in flight; alone it is a usable throttle, and it combines with windows and a rate', () => {
    expect(Throttle.named('scraper').concurrency(3).maxInFlight).toBe(3);
    expect(() => Throttle.named('scraper').concurrency(3).assertUsable()).not.toThrow();
    const stripe = Throttle.named('stripe').limit(100, '1s').concurrency(25).rate(100, '1s', { burst: 10 });
    expect([stripe.maxInFlight, stripe.limits, stripe.tokenRate]).toEqual([25, [{ max: 100, windowMs: 1000 }], { n: 100, perMs: 1000, burst: 10 }]);
    // It travels through the registry.
    expect(JSON.parse(JSON.stringify(declarationData(stripe))).maxInFlight).toBe(25);
    expect(declarationData(Throttle.named('x').limit(1, '1s'))).not.toHaveProperty('maxInFlight');
  });

  it('rejects what is not a positive whole number, and a second concurrency()', () => {
    expect(() => Throttle.named('x').concurrency(0)).toThrow(InvalidThrottleError);
    expect(() => Throttle.named('x').concurrency(2.5)).toThrow("Throttle 'x': concurrency(2.5): n must be a positive whole number of jobs in flight, such as concurrency(5).");
    expect(() => Throttle.named('x').concurrency('3' as unknown as number)).toThrow(/positive whole number/);
    expect(() => Throttle.named('x').concurrency(3).concurrency(2)).toThrow(/concurrency\(\) is declared twice/);
    expect(() => Throttle.named('x').assertUsable()).toThrow(/\.concurrency\(5\)/);
  });

  it('same-named declarations combine to the lowest concurrency, beside every window', () => {
    const merged = mergeDeclarations([
      Throttle.named('s').concurrency(10),
      Throttle.named('s').limit(40, '1s').concurrency(4),
      Throttle.named('s').limit(30, '1s'),
    ]);
    expect(merged.maxInFlight).toBe(4);
    expect(merged.limits).toEqual([{ max: 30, windowMs: 1000 }]);
    expect(mergeDeclarations([Throttle.named('s').limit(3, '1s')])).not.toHaveProperty('maxInFlight');
  });

  it('is counted in exact and in leased delivery: a queue delivering in leased mode may share the throttle', () => {
    const entry = (queue: string, delivery: 'exact' | 'leased', throttle: Throttle): RegistryEntry => ({
      workerId: `w-${queue}`, queue, prefix: 'bull', delivery, leaseMs: delivery === 'leased' ? 100 : 0, declarations: [declarationData(throttle)],
    });
    expect(effectiveThrottle([entry('pages', 'exact', Throttle.named('crawl').concurrency(3))], 'crawl').maxInFlight).toBe(3);
    // The leased queue declares the throttle without concurrency: the merged throttle still has it.
    expect(effectiveThrottle([entry('pages', 'exact', Throttle.named('crawl').concurrency(3)), entry('images', 'leased', Throttle.named('crawl').limit(10, '1s'))], 'crawl'))
      .toMatchObject({ maxInFlight: 3, limits: [{ max: 10, windowMs: 1000 }] });
  });

  it('Grantor.grant refuses a throttle with concurrency: a grant has no end to count it to', async () => {
    const redis = newRedis();
    const grantor = new Grantor({ connection: redis, prefix: uniquePrefix('grant-conc') });
    try {
      await expect(grantor.grant([[{ throttle: Throttle.named('crawl').concurrency(2) }]])).rejects.toThrow(InvalidGrantError);
      await expect(grantor.grant([[{ throttle: Throttle.named('crawl').concurrency(2) }]])).rejects.toThrow(/declares concurrency\(2\), which counts jobs a ThrottledWorker runs/);
    } finally {
      await grantor.close();
      await redis.quit();
    }
  });
});

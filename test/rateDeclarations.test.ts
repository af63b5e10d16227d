import { Throttle } from '../src/declarations/Throttle';
import { mergeDeclarations } from '../src/declarations/mergeDeclarations';
import { InvalidThrottleError } from '../src/errors/InvalidThrottleError';
import { effectiveThrottle } from '../src/queueState/queueConfig';
import type { RegistryEntry } from '../src/queueState/registryEntry';
import { declarationData } from '../src/worker/declarations/declarationRegistry';

describe('rate(n, per, { burst })', () => {
  it('declares a token bucket; burst defaults to 1 (evenly spaced)', () => {
    expect(Throttle.named('sendgrid').rate(500, '1s', { burst: 50 }).tokenRate).toEqual({ n: 500, perMs: 1000, burst: 50 });
    expect(Throttle.named('even').rate(10, '1m').tokenRate).toEqual({ n: 10, perMs: 60_000, burst: 1 });
    // A rate alone is a usable throttle.
    expect(() => Throttle.named('even').rate(10, '1m').assertUsable()).not.toThrow();
  });

  it('survives the other builder calls and the registry round trip', () => {
    const throttle = Throttle.named('s').rate(5, '1s', { burst: 2 }).limit(8, '2s');
    expect(throttle.tokenRate).toEqual({ n: 5, perMs: 1000, burst: 2 });
    expect(JSON.parse(JSON.stringify(declarationData(throttle))).tokenRate).toEqual({ n: 5, perMs: 1000, burst: 2 });
  });

  it('rejects what cannot be counted, naming the option and the fix', () => {
    expect(() => Throttle.named('x').rate(0, '1s')).toThrow(InvalidThrottleError);
    expect(() => Throttle.named('x').rate(1.5, '1s')).toThrow(/positive whole number of deliveries per period/);
    expect(() => Throttle.named('x').rate(10, '1s', { burst: 0 })).toThrow(/burst must be a positive whole number/);
    // @ts-expect-error 'soon' is no WindowText
    expect(() => Throttle.named('x').rate(10, 'soon')).toThrow(/is not a duration/);
    expect(() => Throttle.named('x').rate(10, '1s').rate(5, '1s')).toThrow(/rate\(\) is declared twice/);
  });

  it('a window limit the rate keeps from ever binding is an InvalidThrottleError with the reason', () => {
    expect(() => Throttle.named('x').rate(10, '1s', { burst: 5 }).limit(100, '1s')).toThrow(
      "Throttle 'x': limit 100 per 1s can never apply alongside rate(10, '1s', { burst: 5 }): the rate allows at most 15 in any 1s. Lower the limit below 15, or remove it.",
    );
    // Either order.
    expect(() => Throttle.named('x').limit(100, '1s').rate(10, '1s', { burst: 5 })).toThrow(/at most 15 in any 1s/);
    expect(() => Throttle.named('x').rate(10, '1s', { burst: 5 }).limit(14, '1s')).not.toThrow();
  });

  it('same-named declarations combine to the lowest rate and the lowest burst', () => {
    const merged = mergeDeclarations([
      Throttle.named('s').rate(100, '1s', { burst: 5 }),
      Throttle.named('s').rate(50, '1s', { burst: 20 }).limit(40, '1s'),
      Throttle.named('s').limit(30, '1s'),
    ]);
    expect(merged.tokenRate).toEqual({ n: 50, perMs: 1000, burst: 5 });
    expect(merged.limits).toEqual([{ max: 30, windowMs: 1000 }]);
    // 6000 per minute is slower than 101 per second.
    expect(mergeDeclarations([Throttle.named('s').rate(101, '1s'), Throttle.named('s').rate(6000, '1m', { burst: 3 })]).tokenRate).toEqual({ n: 6000, perMs: 60_000, burst: 1 });
  });

  it('in leased delivery the burst must cover what the rate grants within leaseMs', () => {
    const entry = (leaseMs: number, delivery: 'exact' | 'leased', burst: number): RegistryEntry => ({
      workerId: `w${leaseMs}${delivery}${burst}`, queue: 'q', prefix: 'bull', delivery, leaseMs,
      declarations: [declarationData(Throttle.named('sendgrid').rate(500, '1s', { burst }))],
    });
    expect(effectiveThrottle([entry(100, 'leased', 51)], 'sendgrid').rateLeaseMs).toBe(100);
    // An exact worker's lease does not shorten the burst.
    expect(effectiveThrottle([entry(0, 'exact', 1)], 'sendgrid').rateLeaseMs).toBe(0);
    expect(() => effectiveThrottle([entry(100, 'leased', 50)], 'sendgrid')).toThrow(
      "Throttle 'sendgrid': rate(500, '1s', { burst: 50 }) cannot be kept in leased delivery with leaseMs 100: a leased token may be spent up to 100 ms after its grant, so the burst must cover what the rate grants meanwhile. Raise burst to at least 51, or lower leaseMs to at most 98.",
    );
    // The merged burst counts: an exact worker's lower burst with a leased worker's lease.
    expect(() => effectiveThrottle([entry(100, 'leased', 60), entry(0, 'exact', 10)], 'sendgrid')).toThrow(/Raise burst to at least 51, or lower leaseMs to at most 18/);
    expect(() => effectiveThrottle([entry(100, 'leased', 1)], 'sendgrid')).toThrow(/or deliver exactly/);
  });
});

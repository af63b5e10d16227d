import { adaptiveField, publishedAdaptive } from '../src/declarations/Adaptive';
import { Throttle } from '../src/declarations/Throttle';
import { mergeDeclarations } from '../src/declarations/mergeDeclarations';
import { InvalidThrottleError } from '../src/errors/InvalidThrottleError';
import { ThrottleConflictError } from '../src/errors/ThrottleConflictError';
import { declarationData } from '../src/worker/declarations/declarationRegistry';

describe('adaptive({ min, max, decrease, increase })', () => {
  it('adapts the limit declared right before it, travels through the registry, and merges with the same rule', () => {
    const partner = Throttle.named('partner').rate(50, '1s', { burst: 10 }).adaptive({ min: 5 });
    expect(partner.adaptiveSpec).toEqual({ target: 'rate', min: 5, decrease: 0.5 });
    const windowed = Throttle.named('stripe').limit(1000, '1m').limit(100, '1s').adaptive({ min: 10, max: 80, decrease: 0.7, increase: 5 });
    expect(windowed.adaptiveSpec).toEqual({ target: 1000, min: 10, max: 80, decrease: 0.7, increase: 5 });
    expect(JSON.parse(JSON.stringify(declarationData(partner))).adaptiveSpec).toEqual(partner.adaptiveSpec);
    // Declarations without it adapt too (it only lowers what they declare); the ceiling is the merged limit.
    const merged = mergeDeclarations([partner, Throttle.named('partner').rate(40, '1s', { burst: 10 })]);
    expect(merged.adaptiveSpec).toEqual(partner.adaptiveSpec);
    expect(publishedAdaptive(merged.adaptiveSpec!, merged.limits, merged.tokenRate)).toEqual({ target: 'r', min: 5, ceiling: 40, decrease: 0.5, increase: 1, periodMs: 1000 });
    expect(() => mergeDeclarations([partner, Throttle.named('partner').rate(50, '1s', { burst: 10 }).adaptive({ min: 6 })])).toThrow(ThrottleConflictError);
    // A max below the declared limit caps it; the default increase is a hundredth of that ceiling.
    const capped = publishedAdaptive(windowed.adaptiveSpec!, windowed.limits, windowed.tokenRate)!;
    expect(capped).toEqual({ target: '1000', min: 10, ceiling: 80, decrease: 0.7, increase: 5, periodMs: 1000 });
    expect(adaptiveField(capped)).toBe('1000 10 80 0.7 5 1000');
    expect(publishedAdaptive({ target: 60_000, min: 1, decrease: 0.5 }, [{ max: 5000, windowMs: 60_000 }], undefined)?.increase).toBe(50);
  });

  it('rejects adaptive() with nothing to adapt, twice, or with options out of range, naming the fix', () => {
    expect(() => Throttle.named('t').adaptive({ min: 1 })).toThrow("Throttle 't': adaptive() follows the rate or window limit it adapts, such as .rate(50, '1s').adaptive({ min: 5 }) or .limit(100, '1s').adaptive({ min: 10 }).");
    expect(() => Throttle.named('t').limit(10, '1s').concurrency(3).adaptive({ min: 1 })).toThrow(/a concurrency does not adapt/);
    expect(() => Throttle.named('t').limit(10, '1s').adaptive({ min: 1 }).adaptive({ min: 2 })).toThrow(/adaptive\(\) is declared twice/);
    expect(() => Throttle.named('t').limit(10, '1s').adaptive({ min: 11 })).toThrow("Throttle 't': adaptive({\"min\":11}): min 11 is above the declared 10; give a min of at most 10.");
    expect(() => Throttle.named('t').limit(10, '1s').adaptive({ min: 0 })).toThrow(InvalidThrottleError);
    expect(() => Throttle.named('t').limit(10, '1s').adaptive({} as never)).toThrow(/min must be a positive whole number/);
    expect(() => Throttle.named('t').limit(10, '1s').adaptive({ min: 2, max: 11 })).toThrow(/max must be a whole number from min \(2\) to the declared 10/);
    expect(() => Throttle.named('t').limit(10, '1s').adaptive({ min: 2, decrease: 1 })).toThrow(/decrease must be more than 0 and less than 1/);
    expect(() => Throttle.named('t').limit(10, '1s').adaptive({ min: 2, decrease: 0 })).toThrow(InvalidThrottleError);
    expect(() => Throttle.named('t').limit(10, '1s').adaptive({ min: 2, increase: 0.5 })).toThrow(/increase must be a positive whole number/);
  });
});

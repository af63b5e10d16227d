import { InvalidThrottleError, Key, Missing, Throttle } from '../src';
import { parseWindowMs, WindowInput } from '../src/declarations/window';

describe('windows', () => {
  it.each([
    [250, 250], ['250ms', 250], ['1s', 1000], ['1m', 60_000], ['1h', 3_600_000], ['1d', 86_400_000], ['1.5s', 1500], [' 2 s ', 2000],
  ])('%p is %p ms', (input, ms) => {
    expect(parseWindowMs(input, 'test')).toBe(ms);
  });

  it.each([[0], [-5], [0.5], [NaN], [Infinity], ['1'], ['1 sec'], ['s'], [''], ['0.1ms'], ['-1s']])('rejects %p', (input) => {
    expect(() => Throttle.named('stripe').limit(10, input as WindowInput)).toThrow(InvalidThrottleError);
  });

  it("names the value and the fix (in JavaScript, or text cast from configuration; in TypeScript '1 sec' does not compile)", () => {
    // @ts-expect-error a window's text is a number and a unit (WindowText): '1 sec' is a compile error
    expect(() => Throttle.named('stripe').limit(10, '1 sec')).toThrow(/"1 sec" is not a duration: write milliseconds \(1000\) or a number with a unit/);
  });
});

describe('declarations', () => {
  it('build immutably, limits sorted by window', () => {
    const base = Throttle.named('stripe').limit(20, '1s');
    const both = base.limit(60, '1m');
    expect(base.limits).toEqual([{ max: 20, windowMs: 1000 }]);
    expect(both.limits).toEqual([{ max: 20, windowMs: 1000 }, { max: 60, windowMs: 60_000 }]);
    expect(Throttle.named('s').limit(60, '1m').limit(20, '1s').limits).toEqual(both.limits);
    expect(Object.isFrozen(both)).toBe(true);
  });

  it('keys and missing-key policy', () => {
    const t = Throttle.named('reports').key([Key.data('tenant'), Key.name()]).whenKeyMissing(Missing.Unthrottled).limit(2, '1s');
    expect(t.keyParts).toEqual([{ kind: 'data', path: 'tenant' }, { kind: 'name' }]);
    expect(t.missing).toBe(Missing.Unthrottled);
    expect(Throttle.named('x').missing).toBe(Missing.SharedBucket);
  });

  it('accepts the design\'s example of several limits', () => {
    expect(() => Throttle.named('stripe').limit(60, '1m').limit(20, '1s')).not.toThrow();
  });

  describe('rejects with InvalidThrottleError', () => {
    it('a short limit that can never apply (60 per minute, 100 per second)', () => {
      expect(() => Throttle.named('stripe').limit(60, '1m').limit(100, '1s')).toThrow(
        "Throttle 'stripe': limit 100 per 1s can never apply alongside 60 per 1m: at most 60 can ever go in 1s.",
      );
    });

    it('a long limit that can never apply (20 per second, 2,000 per minute)', () => {
      expect(() => Throttle.named('stripe').limit(20, '1s').limit(2000, '1m')).toThrow(
        "Throttle 'stripe': limit 2000 per 1m can never apply alongside 20 per 1s: 20 per 1s allows at most 1200 per 1m.",
      );
    });

    it('a long limit equal to the most the short one allows (20 per second, 1,200 per minute)', () => {
      expect(() => Throttle.named('stripe').limit(20, '1s').limit(1200, '1m')).toThrow(/at most 1200 per 1m/);
      expect(() => Throttle.named('stripe').limit(20, '1s').limit(1199, '1m')).not.toThrow();
    });

    it('uses ceil for windows that do not divide (10 per 400 ms allows 30 in 1 s)', () => {
      expect(() => Throttle.named('x').limit(10, 400).limit(30, '1s')).toThrow(/at most 30 per 1s/);
      expect(() => Throttle.named('x').limit(10, 400).limit(29, '1s')).not.toThrow();
    });

    it('two limits with the same window', () => {
      expect(() => Throttle.named('stripe').limit(10, '1s').limit(5, 1000)).toThrow(/have the same window/);
    });

    it.each([[0], [-1], [1.5], [NaN], ['10']])('N = %p', (max) => {
      expect(() => Throttle.named('stripe').limit(max as number, '1s')).toThrow(/N must be a positive whole number/);
    });

    it('an empty name', () => {
      expect(() => Throttle.named('')).toThrow(/non-empty name/);
    });

    it('an empty key list', () => {
      expect(() => Throttle.named('x').key([])).toThrow(/needs at least one part/);
    });

    it('something that is not a key part', () => {
      expect(() => Throttle.named('x').key([{ kind: 'header' } as never])).toThrow(/is not a Key/);
    });

    it('an empty key path', () => {
      expect(() => Key.data('')).toThrow(InvalidThrottleError);
      expect(() => Key.data('a..b')).toThrow(InvalidThrottleError);
      expect(() => Key.attribute('')).toThrow(InvalidThrottleError);
    });

    it('a declaration with no limit, when used', () => {
      expect(() => Throttle.named('x').assertUsable()).toThrow("Throttle 'x' has no limit: add one, such as .limit(100, '1s'), .rate(100, '1s', { burst: 10 }) or .concurrency(5).");
    });

    it('an unknown missing-key policy', () => {
      expect(() => Throttle.named('x').whenKeyMissing('drop' as Missing)).toThrow(/takes Missing.SharedBucket or Missing.Unthrottled/);
    });
  });

  it('errors carry their class name', () => {
    try {
      Throttle.named('');
    } catch (error) {
      expect((error as Error).name).toBe('InvalidThrottleError');
      expect(error).toBeInstanceOf(InvalidThrottleError);
    }
    expect.assertions(2);
  });
});

import { Key, mergeDeclarations, Missing, Throttle, ThrottleConflictError } from '../src';

const perCustomer = Throttle.named('stripe-per-customer').key([Key.data('customer')]);

describe('mergeDeclarations', () => {
  it('a single declaration is itself', () => {
    const merged = mergeDeclarations([Throttle.named('stripe').limit(100, '1s')]);
    expect(merged).toEqual({ name: 'stripe', limits: [{ max: 100, windowMs: 1000 }], keyParts: undefined, missing: Missing.SharedBucket, rateLeaseMs: 0, rateLeasedMs: 0, declarations: 1 });
  });

  it('every declared limit applies', () => {
    const merged = mergeDeclarations([Throttle.named('stripe').limit(100, '1s'), Throttle.named('stripe').limit(1000, '1m')]);
    expect(merged.limits).toEqual([{ max: 100, windowMs: 1000 }, { max: 1000, windowMs: 60_000 }]);
  });

  it('lowering a limit in a rolling deploy: the lower one applies from the first updated worker', () => {
    const merged = mergeDeclarations([Throttle.named('stripe').limit(100, '1s'), Throttle.named('stripe').limit(50, '1s')]);
    expect(merged.limits).toEqual([{ max: 50, windowMs: 1000 }]);
  });

  it('raising a limit: the old value holds while any worker still declares it', () => {
    const old = Throttle.named('stripe').limit(100, '1s');
    const raised = Throttle.named('stripe').limit(200, '1s');
    expect(mergeDeclarations([old, raised, raised]).limits).toEqual([{ max: 100, windowMs: 1000 }]);
    expect(mergeDeclarations([raised, raised]).limits).toEqual([{ max: 200, windowMs: 1000 }]);
  });

  it('limits that would be rejected within one declaration are fine across declarations', () => {
    const merged = mergeDeclarations([Throttle.named('s').limit(60, '1m'), Throttle.named('s').limit(100, '1s')]);
    expect(merged.limits).toEqual([{ max: 100, windowMs: 1000 }, { max: 60, windowMs: 60_000 }]);
  });

  it('missing-key policy: the strictest (SharedBucket) wins', () => {
    const unthrottled = perCustomer.whenKeyMissing(Missing.Unthrottled).limit(10, '1s');
    const shared = perCustomer.whenKeyMissing(Missing.SharedBucket).limit(10, '1s');
    expect(mergeDeclarations([unthrottled, unthrottled]).missing).toBe(Missing.Unthrottled);
    expect(mergeDeclarations([unthrottled, shared]).missing).toBe(Missing.SharedBucket);
    expect(mergeDeclarations([shared, unthrottled]).missing).toBe(Missing.SharedBucket);
  });

  it('a different key is a ThrottleConflictError naming both keys', () => {
    const byCustomer = perCustomer.limit(10, '1s');
    const byAccount = Throttle.named('stripe-per-customer').key([Key.data('account')]).limit(10, '1s');
    expect(() => mergeDeclarations([byCustomer, byAccount])).toThrow(ThrottleConflictError);
    expect(() => mergeDeclarations([byCustomer, byAccount])).toThrow(
      `Throttle 'stripe-per-customer' is declared with key [Key.data("customer")] and with key [Key.data("account")]`,
    );
  });

  it('a key against no key is a conflict', () => {
    expect(() => mergeDeclarations([perCustomer.limit(10, '1s'), Throttle.named('stripe-per-customer').limit(10, '1s')])).toThrow(/and with key no key/);
  });

  it('key order matters: [tenant, name] is not [name, tenant]', () => {
    const a = Throttle.named('r').key([Key.data('tenant'), Key.name()]).limit(1, '1s');
    const b = Throttle.named('r').key([Key.name(), Key.data('tenant')]).limit(1, '1s');
    expect(() => mergeDeclarations([a, b])).toThrow(ThrottleConflictError);
  });

  it('refuses to merge different names or nothing', () => {
    expect(() => mergeDeclarations([Throttle.named('a').limit(1, 1), Throttle.named('b').limit(1, 1)])).toThrow(/different throttles/);
    expect(() => mergeDeclarations([])).toThrow(/nothing to merge/);
  });

  it('is pure: same inputs in any order give the same result', () => {
    const decls = [Throttle.named('s').limit(5, '1s').limit(50, '1m'), Throttle.named('s').limit(3, '1s'), Throttle.named('s').limit(40, '1m').limit(500, '1h')];
    const forward = mergeDeclarations(decls);
    expect(mergeDeclarations([...decls].reverse())).toEqual(forward);
    expect(forward.limits).toEqual([{ max: 3, windowMs: 1000 }, { max: 40, windowMs: 60_000 }, { max: 500, windowMs: 3_600_000 }]);
  });
});

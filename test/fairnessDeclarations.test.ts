import { describeKey, Key } from '../src/declarations/Key';
import { Throttle } from '../src/declarations/Throttle';
import { ThrottledWorker } from '../src/worker/ThrottledWorker';
import { checkFairness, mergeFairness } from '../src/declarations/Fairness';
import { InvalidOptionError } from '../src/errors/InvalidOptionError';
import { ThrottleConflictError } from '../src/errors/ThrottleConflictError';
import { luaClassSpec } from '../src/queueState/luaClassSpec';

describe('the fairness option', () => {
  it('takes one key part or several, and weights by key value (a JSON array for several parts)', () => {
    expect(checkFairness('q', { key: Key.data('tenant'), weights: { bigco: 3 } })).toEqual({ key: [{ kind: 'data', path: 'tenant' }], weights: { sbigco: 3 } });
    expect(checkFairness('q', { key: [Key.data('tenant'), Key.name()], weights: { '["acme","sync"]': 2 } }).weights).toEqual({ 'sacme,ssync': 2 });
    expect(() => checkFairness('q', { key: [] })).toThrow(InvalidOptionError);
    expect(() => checkFairness('q', { key: Key.data('tenant'), weights: { acme: 0 } })).toThrow("ThrottledWorker('q'): fairness.weights.acme is 0: a weight must be a positive number, such as { \"acme\": 3 } (groups not named weigh 1).");
    expect(() => checkFairness('q', { key: [Key.data('a'), Key.data('b')], weights: { acme: 2 } })).toThrow(/must name a group of its 2-part key as a JSON array/);
  });

  it('every worker of a queue declares the same key, or none: ThrottleConflictError; weights add up unless they differ', () => {
    const tenant = checkFairness('q', { key: Key.data('tenant'), weights: { a: 2 } });
    expect(mergeFairness('q', [tenant, checkFairness('q', { key: Key.data('tenant'), weights: { b: 3 } })])).toEqual({ key: tenant.key, weights: { sa: 2, sb: 3 } });
    expect(mergeFairness('q', [undefined, undefined])).toBeUndefined();
    expect(() => mergeFairness('q', [tenant, undefined])).toThrow(ThrottleConflictError);
    expect(() => mergeFairness('q', [tenant, checkFairness('q', { key: Key.data('org') })])).toThrow(/declare fairness by \[Key.data\("tenant"\)\] and by \[Key.data\("org"\)\]/);
    expect(() => mergeFairness('q', [tenant, checkFairness('q', { key: Key.data('tenant'), weights: { a: 5 } })])).toThrow(/weight of group sa as 2 and as 5/);
  });

  it('rides last in the Lua class spec, or leaves classifying to the workers when it keys on an attribute', () => {
    const spec = JSON.parse(luaClassSpec([], [{ workerId: 'w', queue: 'q', prefix: 'bull', declarations: [], attributes: false }], checkFairness('q', { key: Key.data('tenant') })));
    expect(spec).toEqual([{ f: [['data', 'tenant']], w: {} }]);
    expect(luaClassSpec([], [{ workerId: 'w', queue: 'q', prefix: 'bull', declarations: [], attributes: false }], checkFairness('q', { key: Key.attribute('tier') }))).toBe('');
  });

  it("Key.fairness() keys a throttle by the worker's fairness key, and a worker without one refuses it", () => {
    const perTenant = Throttle.named('api-per-tenant').key([Key.fairness(), Key.name()]).limit(40, '1s');
    expect(describeKey(perTenant.keyParts)).toBe('[Key.fairness(), Key.name()]');
    expect(perTenant.withFairnessKey([Key.data('tenant')]).keyParts).toEqual([{ kind: 'data', path: 'tenant' }, { kind: 'name' }]);
    const connection = { host: '127.0.0.1', port: 1, lazyConnect: true, maxRetriesPerRequest: null };
    expect(() => new ThrottledWorker('q', null, { connection, throttles: [perTenant], autorun: false })).toThrow(
      "ThrottledWorker('q'): throttle 'api-per-tenant' is keyed by Key.fairness(), the queue's fairness key: give the worker a fairness option, such as fairness: { key: Key.data('tenant') }.",
    );
    expect(() => checkFairness('q', { key: Key.fairness() })).toThrow(InvalidOptionError);
  });
});

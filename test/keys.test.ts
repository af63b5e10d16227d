import fc from 'fast-check';
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { Grantor, Key, Throttle } from '../src';
import { decodeBucket, encodeBucket, encodeSegment, decodeSegment } from '../src/keys/keyEncoding';
import { ThrottleKeys } from '../src/keys/ThrottleKeys';
import { deleteKeysUnder, keysUnder, newRedis, uniquePrefix } from './support/redis';

const NASTY = [':', '{', '}', '{}', '}{', 'a:b', 'a,b', ' ', 'spaces in it', 'ünïcødé ✓', '😀', '\ud800', '%u0041', '%41', 'A', '~', '-', '', 'x'.repeat(10_000)];
const arbKeyValue = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom(...NASTY), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.boolean());

describe('key encoding', () => {
  it('segments never hold a separator or a brace, and decode back', () => {
    fc.assert(fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom(...NASTY)), (text) => {
      const segment = encodeSegment(text);
      expect(segment).not.toMatch(/[:,{}]/);
      expect(decodeSegment(segment)).toBe(text);
    }));
  });

  it('buckets are one-to-one: different key values never share a bucket', () => {
    fc.assert(fc.property(fc.array(arbKeyValue, { minLength: 1, maxLength: 3 }), fc.array(arbKeyValue, { minLength: 1, maxLength: 3 }), (a, b) => {
      const same = encodeBucket(a, 't') === encodeBucket(b, 't');
      const normalize = (values: unknown[]) => values.map((v) => (Object.is(v, -0) ? 0 : v));
      expect(same).toBe(JSON.stringify(normalize(a)) === JSON.stringify(normalize(b)) && a.every((v, i) => typeof v === typeof b[i]));
      expect(decodeBucket(encodeBucket(a, 't'))).toEqual({ kind: 'keyed', values: normalize(a) });
    }));
  });

  it('1, "1" and true are three buckets', () => {
    expect(new Set([encodeBucket([1], 't'), encodeBucket(['1'], 't'), encodeBucket([true], 't')]).size).toBe(3);
  });

  it('every key of a throttle namespace hashes to one slot, whatever the names and key values', () => {
    const prefixes = fc.oneof(fc.constantFrom('bull', '{bull}', 'a{b}c', '{x', 'x}', 'p:q'), fc.string({ minLength: 1, unit: 'binary' }).filter((p) => !/\{\}/.test(p)));
    fc.assert(fc.property(prefixes, fc.oneof(fc.string({ minLength: 1, unit: 'binary' }), fc.constantFrom(...NASTY.filter(Boolean))), fc.array(arbKeyValue, { minLength: 1, maxLength: 3 }), (namespace, name, values) => {
      const keys = new ThrottleKeys('bull', namespace);
      const slot = calculateSlot(keys.registryDeclarations);
      expect(calculateSlot(keys.windowCounter(name, encodeBucket(values, name), 1000))).toBe(slot);
      expect(calculateSlot(keys.returnedTokens(name))).toBe(slot);
      expect(calculateSlot(keys.effectiveLimits(name))).toBe(slot);
      expect(calculateSlot(keys.throttleIndexes(name).full)).toBe(slot);
      expect(calculateSlot(keys.registryVersion)).toBe(slot);
    }));
  });

  it("a hash-tagged prefix keeps its tag: queues and throttles of prefix '{bull}' share one slot", () => {
    const keys = new ThrottleKeys('{bull}');
    const slot = calculateSlot('{bull}:orders:wait');
    expect(calculateSlot(keys.windowCounter('stripe', '-', 1000))).toBe(slot);
    expect(calculateSlot(keys.registryAlive)).toBe(slot);
    expect(calculateSlot(keys.queue('orders').readyJobs)).toBe(slot);
  });

  it("a queue's keys hash with bullmq's keys of the queue, whatever tags the prefix and queue name carry", () => {
    fc.assert(fc.property(fc.constantFrom('bull', '{bull}', 'x{y}'), fc.constantFrom('{orders}', 'orders', '{a}{b}', 'q{r}s', '{o'), fc.string({ unit: 'binary' }), (prefix, queue, member) => {
      const keys = new ThrottleKeys(prefix);
      const q = keys.queue(queue);
      const queueSlot = calculateSlot(`${prefix}:${queue}:wait`);
      // Only a tag makes bullmq's own keys of a queue share a slot; then ours share it too.
      if (calculateSlot(`${prefix}:${queue}:active`) !== queueSlot) return;
      for (const key of [q.readyJobs, q.state, q.workers, q.classJobs(encodeSegment(member)), q.waiters(encodeSegment(member)), q.throttleStats(member).waiting]) {
        expect(calculateSlot(key)).toBe(queueSlot);
      }
    }));
  });

  it('several namespaces spread over the cluster: each has a slot of its own', () => {
    const slots = new Set(['billing', 'mail', 'search', 'reports'].map((namespace) => calculateSlot(new ThrottleKeys('bull', namespace).registryAlive)));
    expect(slots.size).toBe(4);
  });

  it("one throttle's keys can never be mistaken for another's", () => {
    const keys = new ThrottleKeys('bull');
    // A name that looks like another throttle's base plus a bucket still lands under its own, encoded base.
    const sneaky = 'stripe:b:-';
    expect(keys.windowCounter(sneaky, '-', 1000).startsWith(`${keys.throttleBase('stripe')}:`)).toBe(false);
    expect(keys.throttleBase(sneaky)).toBe('bull::throttle:{bull}:stripe%3Ab%3A-');
  });
});

describe('key values against a real Redis', () => {
  let redis: Redis;
  let prefix: string;
  let grantor: Grantor;
  beforeEach(() => {
    redis = newRedis();
    prefix = uniquePrefix('keys');
    grantor = new Grantor({ connection: redis, prefix });
  });
  afterEach(async () => {
    await deleteKeysUnder(redis, prefix);
    await grantor.close();
    await redis.quit();
  });

  it('buckets of nasty key values are independent', async () => {
    const perCustomer = Throttle.named('per{customer}:x').key([Key.data('customer')]).limit(1, '1m');
    const values = [...NASTY, 1, '1', true, 'true'];
    const first = await grantor.grant(values.map((value) => [{ throttle: perCustomer, key: [value] }]));
    expect(first.every((r) => r.granted)).toBe(true);
    const second = await grantor.grant(values.map((value) => [{ throttle: perCustomer, key: [value] }]));
    expect(second.every((r) => !r.granted)).toBe(true);
    // One counter per value, beside the record of the Redis node that counts the namespace and the throttle's
    // bucket indexes (lua/includes/bucketIndexes.lua), which name each value once; all in one slot.
    const keys = (await keysUnder(redis, prefix)).filter((key) => !key.includes('::grantor'));
    expect(keys.filter((key) => key.includes(':b:'))).toHaveLength(values.length);
    const indexes = new ThrottleKeys(prefix).throttleIndexes('per{customer}:x');
    expect(keys).toHaveLength(values.length + 2);
    expect(await redis.zcard(indexes.active)).toBe(values.length);
    expect(await redis.zcard(indexes.full)).toBe(values.length);
    const slots = new Set(keys.map((key) => calculateSlot(key)));
    expect(slots.size).toBe(1);
  });
});

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

  it('every key of a throttle hashes to the slot of its name tag, whatever the key values', () => {
    fc.assert(fc.property(fc.oneof(fc.string({ minLength: 1, unit: 'binary' }), fc.constantFrom(...NASTY.filter(Boolean))), fc.array(arbKeyValue, { minLength: 1, maxLength: 3 }), (name, values) => {
      const keys = new ThrottleKeys('bull');
      const tagSlot = calculateSlot(`{${encodeSegment(name)}}`);
      expect(calculateSlot(keys.windowCounter(name, encodeBucket(values, name), 1000))).toBe(tagSlot);
      expect(calculateSlot(keys.returnedTokens(name))).toBe(tagSlot);
    }));
  });

  it("one throttle's keys can never be mistaken for another's", () => {
    const keys = new ThrottleKeys('bull');
    // A name that looks like another throttle's base plus a bucket still lands under its own, encoded tag.
    const sneaky = 'stripe}:b:-';
    expect(keys.windowCounter(sneaky, '-', 1000).startsWith(keys.throttleBase('stripe'))).toBe(false);
    expect(keys.throttleBase(sneaky)).toBe('bull::throttle:{stripe%7D%3Ab%3A-}');
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
    const keys = await keysUnder(redis, prefix);
    expect(keys).toHaveLength(values.length);
    const slots = new Set(keys.map((key) => calculateSlot(key)));
    expect(slots.size).toBe(1);
  });
});

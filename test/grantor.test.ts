import { Redis } from 'ioredis';
import { Grantor, InvalidGrantError, Key, Missing, Throttle } from '../src';
import { deleteKeysUnder, keysUnder, newRedis, storedTokens, uniquePrefix } from './support/redis';
import { TestClock } from './support/testClock';

const stripe = Throttle.named('stripe').limit(3, '1s');
const perCustomer = Throttle.named('stripe-per-customer').key([Key.data('customer')]).limit(2, '1s');

describe('Grantor', () => {
  let redis: Redis;
  let prefix: string;
  let clock: TestClock;
  let grantor: Grantor;
  beforeEach(() => {
    redis = newRedis();
    prefix = uniquePrefix('grantor');
    clock = new TestClock();
    grantor = new Grantor({ connection: redis, prefix }, clock.internals());
  });
  afterEach(async () => {
    await deleteKeysUnder(redis, prefix);
    await grantor.close();
    await redis.quit();
  });

  it('grants each delivery all or nothing across its buckets', async () => {
    const acme = [{ throttle: stripe }, { throttle: perCustomer, key: ['acme'] }];
    const globex = [{ throttle: stripe }, { throttle: perCustomer, key: ['globex'] }];
    const results = await grantor.grant([acme, acme, acme, globex, globex]);
    expect(results.map((r) => r.granted)).toEqual([true, true, false, true, false]);
    // The refused third acme delivery took nothing from stripe: globex got stripe's last token.
    const counter = await storedTokens(redis, grantor.keys.windowCounter('stripe', '-', 1000));
    expect(counter).toBe('3');
  });

  it('reports grantedAt and retryAt on the Redis clock', async () => {
    const [{ time }] = [{ time: await redis.time() }];
    const redisNowMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    const results = await grantor.grant([[{ throttle: stripe }], [{ throttle: stripe }], [{ throttle: stripe }], [{ throttle: stripe }]]);
    const first = results[0];
    if (!first.granted) throw new Error('expected a grant');
    expect(first.grantedAt).toBeGreaterThanOrEqual(redisNowMs);
    expect(first.grantedAt - redisNowMs).toBeLessThan(1000);
    const refused = results[3];
    if (refused.granted) throw new Error('expected a refusal');
    // Capacity returns one window later, never earlier, and at most one slot (1000/220 ms) later.
    expect(refused.retryAt).toBeGreaterThanOrEqual(first.grantedAt + 1000);
    expect(refused.retryAt).toBeLessThanOrEqual(first.grantedAt + 1000 + 10);
  });

  it('refuses until exactly retryAt, then grants', async () => {
    const full = await grantor.grant([[{ throttle: stripe }], [{ throttle: stripe }], [{ throttle: stripe }]]);
    expect(full.every((r) => r.granted)).toBe(true);
    const { nowUs, results } = await grantor.grantBatch([[{ throttle: stripe }]]);
    const refused = results[0];
    if (refused.granted) throw new Error('expected a refusal');
    // The clock stands still from the refusal on, so that a busy machine's delay between two calls moves
    // nothing: refused 1 ms before retryAt (a whole ms, the first at which room is back), granted at it.
    clock.stopAt(nowUs);
    clock.advance(refused.retryAt - 1 - nowUs / 1000);
    expect((await grantor.grant([[{ throttle: stripe }]]))[0].granted).toBe(false);
    clock.advance(1);
    expect((await grantor.grant([[{ throttle: stripe }]]))[0].granted).toBe(true);
  });

  it('a quiet period uses up no allowance', async () => {
    clock.advance(60_000);
    const results = await grantor.grant([[{ throttle: stripe }], [{ throttle: stripe }], [{ throttle: stripe }], [{ throttle: stripe }]]);
    expect(results.map((r) => r.granted)).toEqual([true, true, true, false]);
  });

  it('several limits: 10, 20, 10, 5, 5, 1, 1, 1, 1, 1, 5 in consecutive seconds fit 60/min with 20/s', async () => {
    const design = Throttle.named('design').limit(60, '1m').limit(20, '1s');
    const perSecond = [10, 20, 10, 5, 5, 1, 1, 1, 1, 1, 5];
    for (const count of perSecond) {
      const results = await grantor.grant(Array.from({ length: count }, () => [{ throttle: design }]));
      expect(results.every((r) => r.granted)).toBe(true);
      // A second later, plus the one slot (1000/220 ms) by which capacity may return late.
      clock.advance(1010);
    }
    // 60 in the minute: nothing more until the first delivery is a minute old.
    expect((await grantor.grant([[{ throttle: design }]]))[0].granted).toBe(false);
    clock.advance(60_000 - perSecond.length * 1010 + 600);
    expect((await grantor.grant([[{ throttle: design }]]))[0].granted).toBe(true);
  });

  it('returned tokens stop counting; a second return is a no-op', async () => {
    const results = await grantor.grant([[{ throttle: stripe }, { throttle: perCustomer, key: ['acme'] }], [{ throttle: stripe }], [{ throttle: stripe }]]);
    const first = results[0];
    if (!first.granted) throw new Error('expected a grant');
    expect((await grantor.grant([[{ throttle: stripe }]]))[0].granted).toBe(false);
    expect(await grantor.returnTokens([first.id])).toBe(2);
    expect(await grantor.returnTokens([first.id])).toBe(0);
    expect(await grantor.returnTokens([first.id, first.id])).toBe(0);
    const again = await grantor.grant([[{ throttle: stripe }], [{ throttle: stripe }]]);
    expect(again.map((r) => r.granted)).toEqual([true, false]);
    expect(await storedTokens(redis, grantor.keys.windowCounter('stripe-per-customer', 'sacme', 1000))).toBeNull();
  });

  it('returning a token after its window has passed changes nothing', async () => {
    const [first] = await grantor.grant([[{ throttle: stripe }]]);
    if (!first.granted) throw new Error('expected a grant');
    clock.advance(1100);
    await grantor.grant([[{ throttle: stripe }], [{ throttle: stripe }], [{ throttle: stripe }]]);
    expect(await grantor.returnTokens([first.id])).toBe(0);
    expect((await grantor.grant([[{ throttle: stripe }]]))[0].granted).toBe(false);
  });

  it('a foreign or corrupt token id is an InvalidGrantError, not a silent decrement', async () => {
    await expect(grantor.returnTokens(['not-a-token'])).rejects.toThrow(InvalidGrantError);
    await expect(grantor.returnTokens(['not-a-token'])).rejects.toThrow(/is not a token id from grant\(\)/);
  });

  it('missing keys: SharedBucket shares one bucket, Unthrottled skips the throttle', async () => {
    const shared = Throttle.named('shared').key([Key.data('customer')]).limit(1, '1s');
    const skipped = Throttle.named('skipped').key([Key.data('customer')]).whenKeyMissing(Missing.Unthrottled).limit(1, '1s');
    const a = await grantor.grant([[{ throttle: shared }], [{ throttle: shared, key: [null] }], [{ throttle: shared, key: ['x'] }]]);
    expect(a.map((r) => r.granted)).toEqual([true, false, true]);
    const b = await grantor.grant([[{ throttle: skipped }], [{ throttle: skipped }], [{ throttle: skipped, key: ['x'] }], [{ throttle: skipped, key: ['x'] }]]);
    expect(b.map((r) => r.granted)).toEqual([true, true, true, false]);
  });

  it('rejects requests that do not fit their throttle', async () => {
    await expect(grantor.grant([[{ throttle: stripe, key: ['acme'] }]])).rejects.toThrow("grant: throttle 'stripe' has no key, but key [\"acme\"] was given; leave key out.");
    await expect(grantor.grant([[{ throttle: perCustomer, key: ['a', 'b'] }]])).rejects.toThrow(/has a key of 1 part\(s\)/);
    await expect(grantor.grant([[{ throttle: Throttle.named('nolimit') }]])).rejects.toThrow(/is not a usable throttle/);
    await expect(grantor.grant([[{ throttle: perCustomer, key: [{ nested: true } as never] }]])).rejects.toThrow(/cannot name a bucket/);
    expect(() => new Grantor({ connection: redis, leaseMs: -1 })).toThrow(/leaseMs -1 must be a whole number/);
  });

  it('an idle bucket holds no Redis key', async () => {
    // Beside the buckets, the namespace keeps one record of the Redis node that counts it (its identity), and
    // each throttle its bucket indexes (lua/includes/bucketIndexes.lua), which expire 2 W + 60 s after.
    const isIndex = (key: string) => key.endsWith(':active') || key.endsWith(':full');
    const bucketKeys = async () => (await keysUnder(redis, prefix)).filter((key) => !key.includes('::grantor') && !isIndex(key));
    await grantor.grant([[{ throttle: stripe }, { throttle: perCustomer, key: ['acme'] }]]);
    expect((await bucketKeys()).length).toBe(2);
    const indexes = (await keysUnder(redis, prefix)).filter(isIndex);
    expect(indexes).toHaveLength(2);
    for (const key of indexes) expect(await redis.pttl(key)).toBeGreaterThan(0);
    // Keys expire on the real Redis clock (the steered clock only moves the scripts) at most W / 4 after
    // their last token is released (EXPIRY_SLACK in windowCounter.lua), plus a slot: wait for real.
    await new Promise((r) => setTimeout(r, 1000 + 250 + 5 + 50));
    expect(await bucketKeys()).toEqual([]);
  });

  it('leaseMs counts each grant against W + h', async () => {
    const leased = new Grantor({ connection: redis, prefix, leaseMs: 200 }, clock.internals());
    const one = Throttle.named('one').limit(1, '1s');
    expect((await leased.grant([[{ throttle: one }]]))[0].granted).toBe(true);
    clock.advance(1050);
    expect((await leased.grant([[{ throttle: one }]]))[0].granted).toBe(false);
    clock.advance(160);
    expect((await leased.grant([[{ throttle: one }]]))[0].granted).toBe(true);
    await leased.close();
  });
});

describe('Grantor.wait', () => {
  let redis: Redis;
  let prefix: string;
  let grantor: Grantor;
  beforeEach(() => {
    redis = newRedis();
    prefix = uniquePrefix('wait');
    grantor = new Grantor({ connection: redis, prefix });
  });
  afterEach(async () => {
    await deleteKeysUnder(redis, prefix);
    await grantor.close();
    await redis.quit();
  });

  it('sleeps until room returns instead of polling', async () => {
    const slow = Throttle.named('slow').limit(1, 400);
    // decide: what every grant and wait asks Redis through (private).
    const calls = jest.spyOn(grantor as unknown as { decide: () => Promise<unknown> }, 'decide');
    const first = await grantor.wait([{ throttle: slow }]);
    const second = await grantor.wait([{ throttle: slow }], { maxWaitMs: 2000 });
    expect(first.granted && second.granted).toBe(true);
    if (!first.granted || !second.granted) return;
    expect(second.grantedAt - first.grantedAt).toBeGreaterThanOrEqual(400);
    // One call for the first grant; the second is refused once, sleeps, and is granted (a slow wake may add one).
    expect(calls.mock.calls.length).toBeLessThanOrEqual(4);
  });

  it('refuses at once when the room would come after maxWaitMs (WaitMaxDuration)', async () => {
    const slow = Throttle.named('slower').limit(1, '1m');
    const first = await grantor.wait([{ throttle: slow }]);
    if (!first.granted) throw new Error('the first wait was refused');
    const calls = jest.spyOn(grantor as unknown as { decide: () => Promise<unknown> }, 'decide');
    // Sleeping until the deadline would outlast the test's timeout: the refusal must come from the first ask.
    const result = await grantor.wait([{ throttle: slow }], { maxWaitMs: 30_000 });
    expect(result.granted).toBe(false);
    if (result.granted) return;
    expect(result.retryAt).toBeGreaterThanOrEqual(first.grantedAt + 60_000);
    expect(calls).toHaveBeenCalledTimes(1);
  });

  it('stops when its signal aborts', async () => {
    const slow = Throttle.named('slowest').limit(1, '1m');
    await grantor.wait([{ throttle: slow }]);
    const controller = new AbortController();
    const waiting = grantor.wait([{ throttle: slow }], { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(waiting).rejects.toThrow(/abort/i);
  });
});

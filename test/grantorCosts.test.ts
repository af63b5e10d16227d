import { Redis } from 'ioredis';
import { Grantor, InvalidGrantError, Key, Throttle } from '../src';
import { deleteKeysUnder, newRedis, uniquePrefix } from './support/redis';
import { TestClock } from './support/testClock';

// Costs per bucket in Grantor.grant (a delivery takes `cost` tokens from every limit of that throttle), and
// grantAvailable (seed 002's TakeAvailable).
const tokensPerMinute = Throttle.named('openai-tokens').limit(100, '1m');
const requests = Throttle.named('openai-requests').limit(10, '1m').rate(5, '1s', { burst: 5 });
const perCustomer = Throttle.named('per-customer').key([Key.data('customer')]).limit(3, '1s');

describe('Grantor costs and grantAvailable', () => {
  let redis: Redis;
  let prefix: string;
  let clock: TestClock;
  let grantor: Grantor;
  beforeEach(() => {
    redis = newRedis();
    prefix = uniquePrefix('costs');
    clock = new TestClock();
    grantor = new Grantor({ connection: redis, prefix }, clock.internals());
  });
  afterEach(async () => {
    await deleteKeysUnder(redis, prefix);
    await grantor.close();
    await redis.quit();
  });

  it('a delivery counts its cost in every limit of that throttle, all or nothing', async () => {
    const call = (tokens: number) => [{ throttle: tokensPerMinute, cost: tokens }, { throttle: requests }];
    const { nowUs, results } = await grantor.grantBatch([call(60), call(30), call(20), call(10)]);
    // The clock stands still from here: a busy machine's delay between calls must not refill the rate (5/s).
    clock.stopAt(nowUs);
    // 60 + 30 fit 100/min; 20 does not (and counts nothing, in either throttle); 10 does.
    expect(results.map((r) => r.granted)).toEqual([true, true, false, true]);
    const [more] = await grantor.grant([call(1)]);
    expect(more.granted).toBe(false);
    // The requests throttle counted 3 deliveries: its rate (burst 5) still has room for 2 cheap ones elsewhere.
    const cheap = await grantor.grant([[{ throttle: requests }], [{ throttle: requests }], [{ throttle: requests }]]);
    expect(cheap.map((r) => r.granted)).toEqual([true, true, false]);
  });

  it('a refused cost says when room for all of it returns; a return gives the whole cost back', async () => {
    const big = [{ throttle: perCustomer, key: ['acme'], cost: 2 }];
    const [first] = await grantor.grant([big]);
    expect(first.granted).toBe(true);
    const [second] = await grantor.grant([big]);
    expect(second.granted).toBe(false);
    if (second.granted || !first.granted) throw new Error('unreachable');
    // Room for 2 more returns only when the first 2 leave the window, a second after them.
    expect(second.retryAt).toBeGreaterThanOrEqual(first.grantedAt + 1000);
    expect(await grantor.returnTokens([first.id])).toBe(1);
    expect((await grantor.grant([big, [{ throttle: perCustomer, key: ['acme'] }]])).map((r) => r.granted)).toEqual([true, true]);
  });

  it('a cost that could never fit is an InvalidGrantError naming the limit, and so is one that is not a whole number', async () => {
    await expect(grantor.grant([[{ throttle: perCustomer, key: ['acme'], cost: 4 }]])).rejects.toThrow(
      "grant: cost 4 for throttle 'per-customer' exceeds its limit 3 per 1000 ms: it could never be granted. Split the work, or raise the limit.",
    );
    await expect(grantor.grant([[{ throttle: requests, cost: 6 }]])).rejects.toThrow(/exceeds its burst 5 of its rate/);
    await expect(grantor.grant([[{ throttle: requests, cost: 1.5 }]])).rejects.toThrow(InvalidGrantError);
    // A bucket named twice takes both costs: together they must fit too.
    await expect(grantor.grant([[{ throttle: perCustomer, key: ['acme'], cost: 2 }, { throttle: perCustomer, key: ['acme'], cost: 2 }]])).rejects.toThrow(/cost 4/);
  });

  it('grantAvailable takes what fits now, up to max, and says when the next would', async () => {
    const delivery = [{ throttle: perCustomer, key: ['globex'] }];
    const taken = await grantor.grantAvailable(delivery, 5);
    expect(taken.ids).toHaveLength(3);
    expect(taken.retryAt).not.toBeNull();
    expect(await grantor.grantAvailable(delivery, 2)).toMatchObject({ ids: [] });
    clock.advance(1000);
    expect((await grantor.grantAvailable(delivery, 2)).ids).toHaveLength(2);
    expect(await grantor.returnTokens(taken.ids)).toBe(0);
    await expect(grantor.grantAvailable(delivery, 0)).rejects.toThrow(/max must be a whole number from 1 to 1000/);
  });
});

import { Redis } from 'ioredis';
import { ThrottleKeys } from '../../src/keys/ThrottleKeys';
import { runReturnTokens } from '../../src/lua/calls/returnTokens';
import { ScriptRunner } from '../../src/lua/scripts';
import { deleteKeysUnder, newRedis, uniquePrefix } from '../support/redis';

// A late job's rate grant is undone only while it is the bucket's latest (lua/includes/rateCounter.lua's
// rateKind.giveBack): a later grant (another TAT stored) keeps it, and a second return of the same job is a no-op.
describe('lua/returnTokens-n.lua: undoing a rate grant', () => {
  let redis: Redis;
  let prefix: string;
  let keys: ThrottleKeys;
  beforeEach(() => {
    redis = newRedis();
    prefix = uniquePrefix('rateundo');
    keys = new ThrottleKeys(prefix);
  });
  afterEach(async () => {
    await deleteKeysUnder(redis, prefix);
    await redis.quit();
  });

  const nowUs = async () => {
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1e6 + Number(micros);
  };
  const giveBack = (jobId: string, grantUs: number, beforeUs: number, afterUs: number) => runReturnTokens(new ScriptRunner(redis), {
    keys, grants: [{ name: 'api', bucket: 'b', nonce: `late.${jobId}.${grantUs}`, grantUs, leaseMs: 20, count: 1, windows: [], rate: { beforeUs, afterUs } }],
  });

  it("puts back the TAT the grant read while the one it wrote is stored, keeping the key's expiry", async () => {
    const key = keys.rateCounter('api', 'b');
    const grantUs = await nowUs();
    const before = grantUs - 5_000;
    const after = grantUs + 3_600_000_000;
    await redis.set(key, String(after), 'PXAT', Math.ceil(after / 1000) + 20);
    const expiresAt = await redis.pexpiretime(key);
    expect((await giveBack('j1', grantUs, before, after)).returned).toEqual([true]);
    expect(Number(await redis.get(key))).toBe(before);
    expect(await redis.pexpiretime(key)).toBe(expiresAt);
    // Once only: the same job's return again changes nothing, even were the TAT back where its grant left it.
    await redis.set(key, String(after), 'KEEPTTL');
    expect((await giveBack('j1', grantUs, before, after)).returned).toEqual([false]);
    expect(Number(await redis.get(key))).toBe(after);
  });

  it('keeps a grant that is no longer the latest: another grant moved the TAT since', async () => {
    const key = keys.rateCounter('api', 'b');
    const grantUs = await nowUs();
    const after = grantUs + 3_600_000_000;
    const later = after + 3_600_000_000;
    await redis.set(key, String(later), 'PXAT', Math.ceil(later / 1000) + 20);
    expect((await giveBack('j2', grantUs, grantUs, after)).returned).toEqual([false]);
    expect(Number(await redis.get(key))).toBe(later);
  });
});

import { join } from 'node:path';
import { Redis } from 'ioredis';
import { bundleLua } from '../src/lua/luaBundler';
import { loadLuaScripts } from '../src/lua/scripts';
import { newRedis, uniquePrefix } from './support/redis';

describe('bundleLua @function', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  it("makes a whole script a function of (KEYS, ARGV): its includes expanded once, its returns the function's", async () => {
    const lua = bundleLua(join(__dirname, 'lua', 'fixtures', 'sumTwice.lua'));
    expect(lua).not.toMatch(/@include|@function/);
    expect(lua.match(/local function double/g)).toHaveLength(1);
    expect(lua.indexOf('local function double')).toBeLessThan(lua.indexOf('local function sum(KEYS, ARGV)'));
    const key = `${uniquePrefix('bundler')}:n`;
    await redis.set(key, '5');
    try {
      expect(await redis.eval(lua, 1, key, 1, 10)).toEqual([7, -1, 25, 2]);
    } finally {
      await redis.del(key);
    }
  });

  it('expands a bullmq script the same way', () => {
    const lua = bundleLua(join(__dirname, '..', 'lua', 'completeJobs-n.lua'));
    expect(lua).toContain('local function moveToFinished(KEYS, ARGV)');
    expect(lua.indexOf('local function removeLock')).toBeLessThan(lua.indexOf('local function moveToFinished(KEYS, ARGV)'));
    expect(lua).not.toMatch(/@include|@function/);
  });
});

describe('the scripts as built for the installed bullmq line', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  // Redis compiles a script's main chunk as one function, which Lua allows at most 200 locals: the delivery
  // scripts, with bullmq's includes, come close (issue 29 plans their shape). With bullmq 5's includes a change of
  // this stop reached 201 and Redis refused takeNextJobs; each line of .ci/bullmq-lines runs this test.
  it('leave room for 2 more locals in their main chunk, on this bullmq line', async () => {
    const short: string[] = [];
    for (const [name, script] of loadLuaScripts()) {
      const more = 'local __room1, __room2 = 1, 2\n';
      try {
        await redis.script('LOAD', more + script.lua);
      } catch (error) {
        short.push(`${name}: ${(error as Error).message}`);
      }
    }
    expect(short).toEqual([]);
  });
});

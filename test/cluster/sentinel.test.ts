import { Redis } from 'ioredis';
import { RedisSentinel, startRedisSentinel } from '../support/redisSentinel';
import { newSentinelClient } from '../support/sentinelClient';

// Proves the sentinel harness (test/support/redisSentinel.ts) with a plain ioredis Sentinel client.
let setup: RedisSentinel;
let client: Redis;

beforeAll(async () => {
  setup = await startRedisSentinel();
  client = newSentinelClient(setup);
}, 120_000);

afterAll(async () => {
  client?.disconnect();
  await setup?.stop();
});

async function roleOf(port: number): Promise<string> {
  const [role] = await setup.command(port, 'ROLE') as [string];
  return role;
}

test('starts a master, 2 replicas and 3 sentinels that agree on the master', async () => {
  const master = await setup.masterPort();
  expect(setup.dataPorts).toContain(master);
  expect(setup.sentinels).toHaveLength(3);
  expect(setup.name).toBe('mymaster');
  for (const port of setup.dataPorts) expect(await roleOf(port)).toBe(port === master ? 'master' : 'slave');
});

test('an ioredis Sentinel client writes, the master fails over, and it writes again to the new master', async () => {
  const key = `harness-sentinel-${process.pid}`;
  await client.set(key, 'before');
  const old = await setup.masterPort();
  expect(await setup.command(old, 'GET', key)).toBe('before');

  const promoted = await setup.failover();
  expect(promoted).not.toBe(old);
  expect(await roleOf(promoted)).toBe('master');
  // The old master stays master until Sentinel demotes it (see failover()); stable means it is a replica.
  await setup.waitForStable();
  expect(await roleOf(old)).toBe('slave');

  await client.set(key, 'after');
  expect(await setup.command(promoted, 'GET', key)).toBe('after');
  await client.del(key);
});

test('kill(SIGKILL) of the master is followed by the sentinels promoting a replica', async () => {
  const key = `harness-sentinel-kill-${process.pid}`;
  const old = await setup.masterPort();
  await setup.kill(old, 'SIGKILL');
  const promoted = await setup.waitForStable();
  expect(promoted).not.toBe(old);
  await client.set(key, 'after-kill');
  expect(await setup.command(promoted, 'GET', key)).toBe('after-kill');
  await client.del(key);
});

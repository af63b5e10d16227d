import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import IORedis, { Redis } from 'ioredis';
import { RedisSetupError, redisErrorKind } from '../../src';
import { freeLoopbackPort, LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { describeRedisError } from '../../src/redis/describeRedisError';
import { failedInTransit, redisErrorCode } from '../../src/redis/redisErrorKind';
import { waitFor } from '../support/bullmq';

async function errorOf(call: () => Promise<unknown>): Promise<Error> {
  try {
    await call();
  } catch (error) {
    return error as Error;
  }
  throw new Error('the call succeeded');
}

/** Real error replies from real servers (own redis-servers: ACL users, a cluster node, a replica). */
describe('redisErrorKind on real Redis replies', () => {
  const clients: Redis[] = [];
  const servers: LocalRedisServer[] = [];
  const dirs: string[] = [];
  let plain: Redis;
  let limited: Redis;
  const connect = (url: string, extra = {}) => {
    const client = new IORedis(url, { maxRetriesPerRequest: 0, ...extra });
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    const server = await startLocalRedisServer({ args: ['--busy-reply-threshold', '50'] });
    servers.push(server);
    plain = connect(server.url);
    await plain.call('ACL', 'SETUSER', 'limited', 'on', '>pw', '+@all', '-client|list', '~allowed:*');
    limited = connect(server.url, { username: 'limited', password: 'pw' });
  });
  afterAll(async () => {
    for (const client of clients) await (client.status === 'ready' ? client.quit().catch(() => client.disconnect()) : client.disconnect());
    for (const server of servers) await server.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('permanent: ACL, credentials, unknown commands, rejected scripts, wrong types', async () => {
    const replies = {
      noPermKey: await errorOf(() => limited.set('other:x', '1')),
      noPermScriptKey: await errorOf(() => limited.eval("return redis.call('set', KEYS[1], 1)", 1, 'other:x')),
      noPermInsideScript: await errorOf(() => limited.eval("return redis.call('set', 'other:y', 1)", 1, 'allowed:x')),
      noPermCommand: await errorOf(() => limited.call('CLIENT', 'LIST')),
      wrongPass: await errorOf(() => plain.call('AUTH', 'limited', 'wrong')),
      unknownCommand: await errorOf(() => plain.call('NOSUCHCOMMAND', 'x')),
      compileError: await errorOf(() => plain.eval('return (', 0)),
      runtimeError: await errorOf(() => plain.eval('return nosuch.x', 0)),
      wrongType: await errorOf(async () => { await plain.set('string-key', 'v'); await plain.hget('string-key', 'f'); }),
    };
    const noAuthServer = await startLocalRedisServer();
    servers.push(noAuthServer);
    await connect(noAuthServer.url).config('SET', 'requirepass', 'secret');
    replies['noAuth' as keyof typeof replies] = await errorOf(() => connect(noAuthServer.url, { retryStrategy: () => null }).get('x'));
    for (const [what, error] of Object.entries(replies)) {
      expect({ what, message: error.message, kind: redisErrorKind(error) }).toEqual({ what, message: error.message, kind: 'permanent' });
    }
    expect(redisErrorCode(replies.noPermKey)).toBe('NOPERM');
    expect(redisErrorCode(replies.wrongPass)).toBe('WRONGPASS');
  });

  it('transient: OOM, NOSCRIPT, BUSY, READONLY, lost connections', async () => {
    const oomServer = await startLocalRedisServer({ args: ['--maxmemory-policy', 'noeviction'] });
    servers.push(oomServer);
    const oom = connect(oomServer.url);
    await oom.set('ballast', 'x'.repeat(2_000_000));
    await oom.config('SET', 'maxmemory', '1mb');
    const replica = await startLocalRedisServer({ args: ['--replicaof', '127.0.0.1', String(servers[0].port)] });
    servers.push(replica);
    const busy = connect(servers[0].url);
    const looping = busy.eval('local i = 0 while true do i = i + 1 end', 0).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 150));
    const busyReply = await errorOf(() => plain.ping());
    await waitFor(async () => (await plain.call('SCRIPT', 'KILL').then(() => true, () => false)), 5_000, 'the looping script to be killed');
    await looping;
    const closedPort = await freeLoopbackPort();
    const refused = connect(`redis://127.0.0.1:${closedPort}`, { retryStrategy: () => null, lazyConnect: true });
    const closed = connect(servers[0].url);
    await closed.ping();
    closed.disconnect();
    const replies = {
      oom: await errorOf(() => oom.set('more', 'x'.repeat(1000))),
      oomScript: await errorOf(() => oom.eval("return redis.call('set', KEYS[1], ARGV[1])", 1, 'more', 'x'.repeat(1000))),
      noScript: await errorOf(() => plain.evalsha('0123456789012345678901234567890123456789', 0)),
      busy: busyReply,
      readOnly: await errorOf(() => connect(replica.url).set('x', '1')),
      refused: await errorOf(() => refused.connect()),
      closed: await errorOf(() => closed.get('x')),
    };
    for (const [what, error] of Object.entries(replies)) {
      expect({ what, message: error.message, kind: redisErrorKind(error) }).toEqual({ what, message: error.message, kind: 'transient' });
    }
    expect(redisErrorCode(replies.busy)).toBe('BUSY');
    // Replies that need a server state too costly to reach here: their wording as Redis writes it.
    for (const message of [
      'LOADING Redis is loading the dataset in memory', 'TRYAGAIN Multiple keys request during rehashing of slot',
      'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to \'no\'.', 'ECONNRESET',
      'read ECONNRESET', 'connect ETIMEDOUT', 'Connection is closed.', 'Stream isn\'t writeable and enableOfflineQueue options is false',
    ]) {
      expect({ message, kind: redisErrorKind(new Error(message)) }).toEqual({ message, kind: 'transient' });
    }
  });

  it('Cluster: keys in several slots and keys of a slot served elsewhere are permanent, with a fix naming the hash tag', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cluster-node-'));
    dirs.push(dir);
    // One node serving half the slots: enough for CROSSSLOT, non-local keys and CLUSTERDOWN, without a cluster.
    const node = await startLocalRedisServer({ dir, args: ['--cluster-enabled', 'yes', '--cluster-require-full-coverage', 'no', '--cluster-config-file', join(dir, 'nodes.conf')] });
    servers.push(node);
    const client = connect(node.url);
    await client.call('CLUSTER', 'ADDSLOTSRANGE', '0', '8191');
    await waitFor(async () => /cluster_state:ok/.test(String(await client.call('CLUSTER', 'INFO'))), 10_000, 'the cluster node');
    // 'b' is in slot 3300 (served), 'a' in 15495 (not served).
    const crossSlot = await errorOf(() => client.eval('return 1', 2, 'b', 'f{x}'));
    const nonLocal = await errorOf(() => client.eval("return redis.call('get', 'a')", 1, 'b'));
    const slotNotServed = await errorOf(() => client.get('a'));
    expect(redisErrorCode(crossSlot)).toBe('CROSSSLOT');
    expect(redisErrorKind(crossSlot)).toBe('permanent');
    expect(nonLocal.message).toMatch(/attempted to access a non local key/);
    expect(redisErrorKind(nonLocal)).toBe('permanent');
    expect(slotNotServed.message).toMatch(/^CLUSTERDOWN/);
    expect(redisErrorKind(slotNotServed)).toBe('transient');
    const described = await describeRedisError(crossSlot, client, { who: "ThrottledWorker('orders')", prefix: 'bull' });
    expect(described).toBeInstanceOf(RedisSetupError);
    expect(described.message).toContain("ThrottledWorker('orders'): the keys of one of bullmq's scripts are in different Redis Cluster hash slots");
    expect(described.message).toContain("prefix: '{bull}'");
  });

  it('names the command an ACL user may not run', async () => {
    const error = await errorOf(() => limited.call('CLIENT', 'LIST'));
    const described = await describeRedisError(error, limited, { who: "ThrottledWorker('orders')", prefix: 'bull' });
    expect(described.message).toContain("Redis ACL user 'limited' may not run the command 'client|list'");
    expect(described.message).toContain('ACL SETUSER limited +client|list');
  });
});

/** Errors of a failover, as ioredis raises them against real servers: what the worker retries and what it hands to bullmq. */
describe('failedInTransit and ioredis Cluster giving up', () => {
  let server: LocalRedisServer;
  let dir: string;
  const clients: { disconnect(): void }[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bullmq-throttle-transit-'));
    server = await startLocalRedisServer({ dir, args: ['--cluster-enabled', 'yes', '--cluster-require-full-coverage', 'no', '--cluster-config-file', join(dir, 'nodes.conf')] });
    const admin = new IORedis(server.url, { maxRetriesPerRequest: 0 });
    clients.push(admin);
    await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '8191');
    await waitFor(async () => /cluster_state:ok/.test(String(await admin.call('CLUSTER', 'INFO'))), 10_000, 'the cluster node');
  });
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('"Too many Cluster redirections", as ioredis words it after a failover, is transient and got no answer', () => {
    // The messages the failover tests (test/cluster/failover.test.ts) see from ioredis Cluster during a kill -9.
    for (const last of ['Error: Connection is closed.', 'ReplyError: MOVED 9263 127.0.0.1:7001', 'ReplyError: CLUSTERDOWN The cluster is down']) {
      const error = new Error(`Too many Cluster redirections. Last error: ${last}`);
      expect(redisErrorKind(error)).toBe('transient');
      expect(failedInTransit(error)).toBe(true);
    }
  });

  it('a refused connection got no answer; a reply of the script, or of bullmq (a numeric code), did', async () => {
    const port = await freeLoopbackPort();
    const refused = new IORedis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    refused.on('error', () => undefined);
    clients.push(refused);
    expect(failedInTransit(await errorOf(() => refused.get('x')))).toBe(true);
    const plain = new IORedis(server.url, { maxRetriesPerRequest: 0 });
    clients.push(plain);
    expect(failedInTransit(await errorOf(() => plain.eval("return redis.error_reply('boom')", 1, 'b')))).toBe(false);
    expect(failedInTransit(Object.assign(new Error('Missing lock for job 7. moveToFinished'), { code: -2 }))).toBe(false);
    expect(failedInTransit(new Error('Connection is closed.'))).toBe(true);
    expect(failedInTransit(new Error('LOADING Redis is loading the dataset in memory'))).toBe(true);
    expect(failedInTransit(new Error('READONLY You can\'t write against a read only replica.'))).toBe(true);
  });

  it('looks at the error ioredis gave up on: a permanent one stays permanent', () => {
    expect(redisErrorKind(new Error('Too many Cluster redirections. Last error: ReplyError: NOPERM this user has no permissions'))).toBe('permanent');
    expect(failedInTransit(new Error('Too many Cluster redirections. Last error: ReplyError: NOPERM this user has no permissions'))).toBe(false);
    expect(redisErrorKind(new Error('Too many Cluster redirections. Last error: Error: Connection is closed.'))).toBe('transient');
    expect(redisErrorKind(new Error('Too many Cluster redirections. Last error: ReplyError: MOVED 9263 127.0.0.1:7001'))).toBe('transient');
  });
});

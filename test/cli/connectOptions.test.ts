import { Command } from 'commander';
import { Throttle } from '../../src';
import { describeError } from '../../src/cli/errors';
import { GlobalOptions, splitRedisUrls } from '../../src/cli/options';
import { buildProgram } from '../../src/cli/program';
import { connectionFromEnv } from '../../src/metrics/exampleServer';
import { clusterSeedsOf } from '../../src/redis/clusterSeeds';
import { deleteKeysUnder, newRedis } from '../support/redis';
import { WorkerTestBed } from '../support/bullmq';
import { cli } from '../support/runCli';
import { testRedisUrl } from '../support/testRedis';

/** The global options a command line parses to (the command itself is not run). */
async function globalsFor(args: string[], env: NodeJS.ProcessEnv = {}): Promise<GlobalOptions> {
  const program = buildProgram({ env, writeOut: () => undefined, writeErr: () => undefined });
  let globals: GlobalOptions | undefined;
  program.hook('preAction', (_program: Command, action: Command) => {
    globals = action.optsWithGlobals() as GlobalOptions;
    throw new Error('parsed');
  });
  await program.parseAsync(['node', 'bullmq-throttle', ...args]).catch((error: Error) => {
    if (error.message !== 'parsed') throw error;
  });
  return globals!;
}

describe('connecting the CLI to a cluster: options', () => {
  it('--redis: the default from REDIS_URL (commas: several seeds), replaced by the first --redis, added to by each further one', async () => {
    expect((await globalsFor(['stats', 'q'])).redis).toEqual(['redis://127.0.0.1:6379']);
    expect((await globalsFor(['stats', 'q'], { REDIS_URL: 'redis://a:1, redis://b:2' })).redis).toEqual(['redis://a:1', 'redis://b:2']);
    const given = await globalsFor(['stats', 'q', '--redis', 'redis://c:3', '--redis', 'redis://d:4,redis://e:5'], { REDIS_URL: 'redis://a:1' });
    expect(given.redis).toEqual(['redis://c:3', 'redis://d:4', 'redis://e:5']);
    expect(given.cluster).toBeUndefined();
    expect(given.throttlePrefix).toBeUndefined();
  });

  it('--cluster and --throttle-prefix, before or after the command', async () => {
    expect(await globalsFor(['--cluster', 'throttle', 'stripe', '--throttle-prefix', 'shared'])).toMatchObject({ cluster: true, throttlePrefix: 'shared', prefix: 'bull' });
    expect(await globalsFor(['--throttle-prefix', '{t}', 'release', 'q'])).toMatchObject({ throttlePrefix: '{t}' });
    expect(splitRedisUrls(' , ')).toEqual([]);
  });

  it('a MOVED reply (where INFO was refused, so the cluster went unnoticed) names --cluster', () => {
    const moved = Object.assign(new Error('MOVED 9263 127.0.0.1:7001'), { name: 'ReplyError' });
    expect(describeError(moved, 'redis://127.0.0.1:7000')).toBe(
      "Redis at redis://127.0.0.1:7000 is a Redis Cluster node that does not hold the key asked for (MOVED 9263 127.0.0.1:7001): run again with --cluster (or give several --redis seed nodes).",
    );
  });

  it('cluster seeds from URLs: each host and port, the first URL\'s credentials and TLS for every node', () => {
    expect(clusterSeedsOf(['rediss://app:p%40ss@10.0.0.1:7000', 'redis://10.0.0.2'])).toEqual({
      startupNodes: [{ host: '10.0.0.1', port: 7000 }, { host: '10.0.0.2', port: 6379 }],
      redisOptions: { username: 'app', password: 'p@ss', tls: {} },
    });
    expect(connectionFromEnv('redis://one:1')).toBe('redis://one:1');
    expect(connectionFromEnv('redis://one:1,redis://two:2')).toEqual({
      startupNodes: [{ host: 'one', port: 1 }, { host: 'two', port: 2 }],
      clusterOptions: { redisOptions: {} },
    });
  });
});

describe('--throttle-prefix on a single Redis', () => {
  const redis = newRedis();
  const bed = new WorkerTestBed('cli-namespace');
  const namespace = `${bed.prefix}-shared`;
  beforeAll(async () => {
    const worker = bed.worker('mail', null, { throttlePrefix: namespace, throttles: [Throttle.named('smtp').limit(7, '1s')] });
    await worker.waitUntilReady();
  });
  afterAll(async () => {
    await bed.close(redis);
    await deleteKeysUnder(redis, namespace);
    await redis.quit();
  });

  it('reads the throttles of the namespace it names, on every command', async () => {
    const base = ['--redis', testRedisUrl(), '--prefix', bed.prefix];
    const throttle = await cli(['throttle', 'smtp', '--json', '--throttle-prefix', namespace, ...base]);
    expect(throttle.stderr).toBe('');
    expect(JSON.parse(throttle.stdout)).toMatchObject({ name: 'smtp', queues: ['mail'], limits: [{ max: 7, windowMs: 1000 }] });
    const bucket = await cli(['bucket', 'smtp', '--json', '--throttle-prefix', namespace, ...base]);
    expect(JSON.parse(bucket.stdout)).toMatchObject({ throttle: 'smtp', key: [], waiting: 0 });
    const stats = await cli(['stats', 'mail', '--json', '--throttle-prefix', namespace, ...base]);
    expect(JSON.parse(stats.stdout)).toMatchObject({ queue: 'mail', throttledWorkers: 1, throttles: [{ name: 'smtp' }] });
    // Without it the queue's declarations are not found, and the error says which option to look at.
    const without = await cli(['throttle', 'smtp', ...base]);
    expect(without.code).toBe(1);
    expect(without.stderr).toMatch(/--throttle-prefix/);
  });
});

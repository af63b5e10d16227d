import { Queue } from 'bullmq';
import IORedis, { Redis } from 'ioredis';
import { RedisSetupError, Throttle, ThrottledWorker } from '../../src';
import { LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { TcpProxy } from '../metrics/tcpProxy';
import { capturingLogger, connectionFor, waitFor } from '../support/bullmq';

/** Every test here runs its own redis-server: ACL users, maxmemory and outages never touch the shared one. */
describe('Redis faults', () => {
  let server: LocalRedisServer | undefined;
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await server?.stop();
    server = undefined;
  });

  function admin(s: LocalRedisServer): Redis {
    const redis = new IORedis(s.url, { maxRetriesPerRequest: null });
    closers.push(async () => redis.disconnect());
    return redis;
  }

  function worker(name: string, opts: ConstructorParameters<typeof ThrottledWorker>[2], processor: () => Promise<unknown> = async () => undefined): { worker: ThrottledWorker; errors: Error[] } {
    const w = new ThrottledWorker(name, processor, opts);
    const errors: Error[] = [];
    w.on('error', (error) => errors.push(error));
    closers.push(() => w.close());
    return { worker: w, errors };
  }

  it('a worker whose ACL user may not access a throttle key fails its start at once, naming the key, and emits error once', async () => {
    server = await startLocalRedisServer();
    // Every command, but only bullmq's keys of the queue: this package's keys under 'acl::' are denied.
    await admin(server).call('ACL', 'SETUSER', 'jobs', 'on', '>secret', '+@all', '~acl:orders:*');
    const { logger, lines } = capturingLogger();
    const connection = { ...connectionFor(server.url), username: 'jobs', password: 'secret' };
    const { worker: w, errors } = worker('orders', { connection, prefix: 'acl', logger, autorun: false, throttles: [Throttle.named('api').limit(5, '1s')] });
    const failure = await Promise.race([
      w.waitUntilReady().then(() => undefined, (error: Error) => error),
      new Promise<string>((r) => setTimeout(() => r('still pending after 5 s'), 5_000)),
    ]) as Error;
    expect(failure).toBeInstanceOf(RedisSetupError);
    expect(failure!.message).toContain("ThrottledWorker('orders'): Redis ACL user 'jobs' may not access key");
    expect(failure!.message).toContain("'acl::throttle:{acl}::registry:");
    expect(failure!.message).toContain('ACL SETUSER jobs ~acl:*');
    expect((failure as RedisSetupError).code).toBe('NOPERM');
    await expect(w.run()).rejects.toBe(failure);
    await new Promise((r) => setTimeout(r, 300));
    expect(errors).toEqual([failure]);
    expect(lines.some((l) => l.level === 50 && /does not start/.test(l.msg))).toBe(true);
  });

  it('a worker whose ACL user may not run WAIT (replica confirmation) fails its start at once, naming the command', async () => {
    server = await startLocalRedisServer();
    await admin(server).call('ACL', 'SETUSER', 'jobs', 'on', '>secret', '+@all', '-wait', '~*');
    const connection = { ...connectionFor(server.url), username: 'jobs', password: 'secret' };
    const { worker: w } = worker('orders', { connection, prefix: 'nowait', autorun: false, throttles: [Throttle.named('api').limit(5, '1s')] });
    const failure = await Promise.race([
      w.waitUntilReady().then(() => undefined, (error: Error) => error),
      new Promise<string>((r) => setTimeout(() => r('still pending after 5 s'), 5_000)),
    ]) as Error;
    expect(failure).toBeInstanceOf(RedisSetupError);
    expect((failure as RedisSetupError).code).toBe('NOPERM');
    expect(failure.message.toLowerCase()).toContain('wait');
  });

  it('an autorun worker that cannot start emits error once, not twice', async () => {
    server = await startLocalRedisServer();
    await admin(server).call('ACL', 'SETUSER', 'jobs', 'on', '>secret', '+@all', '~auto:orders:*');
    const connection = { ...connectionFor(server.url), username: 'jobs', password: 'secret' };
    const { errors } = worker('orders', { connection, prefix: 'auto', throttles: [Throttle.named('api').limit(5, '1s')] });
    await waitFor(() => errors.length > 0, 5_000, 'the error event');
    await new Promise((r) => setTimeout(r, 300));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(RedisSetupError);
  });

  it('a wrong password fails the start at once, though the connection keeps retrying', async () => {
    server = await startLocalRedisServer();
    await admin(server).call('ACL', 'SETUSER', 'jobs', 'on', '>secret', '+@all', '~*');
    const connection = { ...connectionFor(server.url), username: 'jobs', password: 'wrong' };
    const { worker: w, errors } = worker('orders', { connection, prefix: 'pass', autorun: false, throttles: [Throttle.named('api').limit(5, '1s')] });
    const failure = await Promise.race([
      w.waitUntilReady().then(() => undefined, (error: Error) => error),
      new Promise<string>((r) => setTimeout(() => r('still pending after 5 s'), 5_000)),
    ]) as Error;
    expect(failure).toBeInstanceOf(RedisSetupError);
    expect(failure.message).toContain("ThrottledWorker('orders'): Redis refused the connection's credentials");
    expect(failure.message).toContain('WRONGPASS');
    expect(errors.filter((e) => e instanceof RedisSetupError)).toEqual([failure]);
  });

  /** Fills Redis past a maxmemory under noeviction: every write that adds memory is refused (OOM). */
  async function runOutOfMemory(redis: Redis): Promise<void> {
    await redis.set('ballast', 'x'.repeat(4_000_000));
    await redis.config('SET', 'maxmemory', '1mb');
  }

  async function countErrorsFor(errors: Error[], ms: number): Promise<Error[]> {
    const before = errors.length;
    await new Promise((r) => setTimeout(r, ms));
    return errors.slice(before);
  }

  it('under OOM a running worker emits about one error a second, and loses no job once memory is raised', async () => {
    server = await startLocalRedisServer({ args: ['--maxmemory-policy', 'noeviction'] });
    const redis = admin(server);
    const connection = connectionFor(server.url);
    const queue = new Queue('oom', { connection, prefix: 'oom' });
    closers.push(() => queue.close());
    const processed = new Set<string>();
    const { logger, lines } = capturingLogger();
    // Heartbeats every 200 ms: each fails under OOM, and a few lines, not twenty, say so.
    const { worker: w, errors } = worker('oom', { connection, prefix: 'oom', logger, concurrency: 10, declarationTtlMs: 600, throttles: [Throttle.named('api').limit(200, '1s')] },
      async () => undefined);
    w.on('completed', (job) => processed.add(job.id!));
    await w.waitUntilReady();
    await queue.addBulk(Array.from({ length: 1500 }, (_, i) => ({ name: 'n', data: { i } })));
    await waitFor(() => processed.size >= 100, 10_000, 'the first deliveries');
    await runOutOfMemory(redis);
    const during = await countErrorsFor(errors, 4_000);
    expect(during.length).toBeGreaterThanOrEqual(1);
    expect(during.length).toBeLessThanOrEqual(6);
    expect(during.every((e) => /OOM/.test(e.message))).toBe(true);
    const failureLines = lines.filter((l) => / failed; retrying/.test(l.msg));
    expect(failureLines.length).toBeGreaterThanOrEqual(1);
    expect(failureLines.length).toBeLessThanOrEqual(4);
    await redis.config('SET', 'maxmemory', '0');
    await waitFor(() => processed.size === 1500, 30_000, 'every job after memory is raised');
    expect(await queue.getJobCounts('completed', 'active', 'wait', 'failed')).toEqual({ completed: 1500, active: 0, wait: 0, failed: 0 });
  });

  it('a worker started on a Redis already out of memory retries, emits about one error a second, then delivers every job', async () => {
    server = await startLocalRedisServer({ args: ['--maxmemory-policy', 'noeviction'] });
    const redis = admin(server);
    const connection = connectionFor(server.url);
    const queue = new Queue('full', { connection, prefix: 'full' });
    closers.push(() => queue.close());
    await queue.addBulk(Array.from({ length: 50 }, (_, i) => ({ name: 'n', data: { i } })));
    await runOutOfMemory(redis);
    const processed = new Set<string>();
    const { worker: w, errors } = worker('full', { connection, prefix: 'full', concurrency: 5, throttles: [Throttle.named('api').limit(100, '1s')] });
    w.on('completed', (job) => processed.add(job.id!));
    const during = await countErrorsFor(errors, 4_000);
    expect(during.length).toBeGreaterThanOrEqual(1);
    expect(during.length).toBeLessThanOrEqual(6);
    await redis.config('SET', 'maxmemory', '0');
    await w.waitUntilReady();
    await waitFor(() => processed.size === 50, 20_000, 'every job after memory is raised');
  });

  it('warns once per Redis when maxmemory-policy is not noeviction, and not with noeviction', async () => {
    const warnings: string[] = [];
    const spy = jest.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => { warnings.push(args.map(String).join(' ')); });
    closers.push(async () => spy.mockRestore());
    const ours = () => warnings.filter((w) => w.includes('bullmq-throttle'));
    for (const [policy, expected] of [['allkeys-lru', 1], ['noeviction', 0]] as const) {
      server = await startLocalRedisServer({ args: ['--maxmemory-policy', policy] });
      warnings.length = 0;
      const { logger, lines } = capturingLogger();
      const connection = connectionFor(server.url);
      const a = worker('evict', { connection, prefix: 'evict', logger, throttles: [Throttle.named('api').limit(5, '1s')] });
      const b = worker('evict', { connection, prefix: 'evict', logger, throttles: [Throttle.named('api').limit(5, '1s')] });
      await a.worker.waitUntilReady();
      await b.worker.waitUntilReady();
      await new Promise((r) => setTimeout(r, 200));
      expect(ours()).toHaveLength(expected);
      const logged = lines.filter((l) => /maxmemory-policy/.test(l.msg));
      expect(logged).toHaveLength(expected);
      if (expected) {
        expect(logged[0].msg).toContain(`maxmemory-policy '${policy}'`);
        expect(logged[0].msg).toContain('noeviction');
      }
      for (const close of closers.splice(1).reverse()) await close();
      await server.stop();
      server = undefined;
    }
  });

  it('reads the eviction policy from INFO when the ACL denies CONFIG', async () => {
    server = await startLocalRedisServer({ args: ['--maxmemory-policy', 'allkeys-random'] });
    await admin(server).call('ACL', 'SETUSER', 'noconfig', 'on', '>pw', '+@all', '-config', '~*');
    const spy = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    closers.push(async () => spy.mockRestore());
    const { logger, lines } = capturingLogger();
    const connection = { ...connectionFor(server.url), username: 'noconfig', password: 'pw' };
    const { worker: w, errors } = worker('evict', { connection, prefix: 'evict', logger, throttles: [Throttle.named('api').limit(5, '1s')] });
    await w.waitUntilReady();
    await waitFor(() => lines.some((l) => /maxmemory-policy 'allkeys-random'/.test(l.msg)), 5_000, 'the warning');
    expect(errors).toEqual([]);
  });

  it('after an outage longer than the declarations live, no live ThrottledWorker is taken for a plain one', async () => {
    server = await startLocalRedisServer();
    const proxy = new TcpProxy({ host: '127.0.0.1', port: server.port });
    await proxy.start();
    closers.push(() => proxy.cut());
    const { logger, lines } = capturingLogger();
    const connection = { ...connectionFor(`redis://127.0.0.1:${proxy.port}`), retryStrategy: () => 100 };
    const opts = { connection, prefix: 'outage', logger, declarationTtlMs: 1_500, throttles: [Throttle.named('api').limit(5, '1s')] };
    const workers = [worker('outage', opts), worker('outage', opts), worker('outage', opts)];
    for (const { worker: w } of workers) await w.waitUntilReady();
    await new Promise((r) => setTimeout(r, 1_000));
    await proxy.cut();
    await new Promise((r) => setTimeout(r, 3_000));
    await proxy.restore();
    await waitFor(() => lines.some((l) => l.msg === 'reconnected to Redis'), 10_000, 'the reconnection');
    await new Promise((r) => setTimeout(r, 4_000));
    expect(lines.filter((l) => /lapsed/.test(l.msg)).length).toBeGreaterThan(0);
    expect(lines.filter((l) => /not ThrottledWorkers/.test(l.msg))).toEqual([]);
  });
});

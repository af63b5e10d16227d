import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freeRedisPort } from './freeRedisPorts';
import { fieldsOf, infoOf, redisCommand, tryRedisCommand } from './redisAdmin';
import { RedisSignal } from './redisProcess';
import { RedisProcessGroup } from './redisProcessGroup';
import { done, giveUp, notYet, waitUntil } from './waitUntil';

export interface RedisSentinelOptions {
  /** Replicas of the first master (default 2) and sentinels watching it (default 3, quorum 2). */
  replicas?: number;
  sentinels?: number;
  quorum?: number;
  /** `sentinel down-after-milliseconds` (default 1000) and `sentinel failover-timeout` (default 5000). */
  downAfterMs?: number;
  failoverTimeoutMs?: number;
  /** Extra redis-server arguments for the master and replicas (not the sentinels). */
  extraArgs?: string[];
  startTimeoutMs?: number;
}

const HOST = '127.0.0.1';
const NAME = 'mymaster';

/** A master, its replicas and the sentinels monitoring them, as redis-server child processes; see docs/testing.md. */
export class RedisSentinel {
  /** For ioredis: `new Redis({ sentinels, name })`. */
  readonly sentinels: { host: string; port: number }[];
  readonly name = NAME;

  constructor(private readonly group: RedisProcessGroup, readonly dataPorts: number[], readonly sentinelPorts: number[]) {
    this.sentinels = sentinelPorts.map((port) => ({ host: HOST, port }));
  }

  /** The master's port, as the first sentinel that answers reports it. */
  async masterPort(): Promise<number> {
    for (const port of this.runningSentinels()) {
      const address = await tryRedisCommand(port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', NAME]);
      if (Array.isArray(address)) return Number(address[1]);
    }
    throw new Error('no sentinel answers GET-MASTER-ADDR-BY-NAME');
  }

  /**
   * `SENTINEL FAILOVER mymaster`; resolves with the new master's port once every running sentinel reports it, none
   * has a failover in progress, and it answers as master. The old master is not demoted yet then: Sentinel turns
   * it into a replica some 10 s later (it waits 8 s for newer configs, then its next INFO), and until then it still
   * accepts writes from clients that did not switch (ioredis does at once with `failoverDetector: true`).
   * `waitForStable()` waits for that demotion too.
   */
  async failover(timeoutMs = 30_000): Promise<number> {
    const before = await this.masterPort();
    const [asked] = this.runningSentinels();
    // Right after a failover the sentinel has no replica it trusts yet (NOGOODSLAVE: it reads each one's INFO
    // every 10 s) or is still finishing (INPROG): ask again until it accepts.
    await waitUntil(`sentinel ${asked} to accept SENTINEL FAILOVER`, async () => {
      try {
        await redisCommand(asked, ['SENTINEL', 'FAILOVER', NAME], 1_000);
        return done(undefined);
      } catch (error) {
        if (/NOGOODSLAVE|INPROG/.test((error as Error).message)) return notYet((error as Error).message);
        return giveUp(error as Error);
      }
    }, { timeoutMs, intervalMs: 500 });
    return waitUntil(`the sentinels to report a master other than ${before}, answering as master`, async () => {
      let master: number | undefined;
      for (const sentinel of this.runningSentinels()) {
        const address = await redisCommand(sentinel, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', NAME], 1_000) as string[];
        const port = Number(address[1]);
        if (port === before) return notYet(`sentinel ${sentinel} still reports ${before}`);
        if (master !== undefined && port !== master) return notYet(`sentinels disagree: ${master} and ${port}`);
        master = port;
        const flags = fieldsOf(await redisCommand(sentinel, ['SENTINEL', 'MASTER', NAME], 1_000)).get('flags') ?? '';
        if (flags.includes('failover')) return notYet(`sentinel ${sentinel} has the master as ${flags}`);
      }
      if (master === undefined) return notYet('no sentinel is running');
      const role = (await infoOf(master, 'replication', 1_000)).get('role');
      return role === 'master' ? done(master) : notYet(`${master} answers role ${role}`);
    }, { timeoutMs, intervalMs: 100 });
  }

  /**
   * Waits until every running sentinel reports the same master, that master is one of our running data nodes and
   * answers as master, every other running data node replicates it with its link up (its own INFO) and is flagged a
   * plain `slave` by the sentinels, no failover is in progress, and the sentinels reach quorum. Resolves with the
   * master's port.
   */
  async waitForStable(timeoutMs = 30_000): Promise<number> {
    return waitUntil('a stable sentinel setup', async () => {
      const sentinels = this.runningSentinels();
      const dataNodes = this.dataPorts.filter((port) => this.group.get(port).state === 'running');
      let master: number | undefined;
      for (const sentinel of sentinels) {
        const address = await redisCommand(sentinel, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', NAME], 1_000) as string[];
        const port = Number(address[1]);
        if (master !== undefined && port !== master) return notYet(`sentinels disagree: ${master} and ${port}`);
        master = port;
        const flags = fieldsOf(await redisCommand(sentinel, ['SENTINEL', 'MASTER', NAME], 1_000)).get('flags');
        if (flags !== 'master') return notYet(`sentinel ${sentinel} has the master as ${flags}`);
        const replicas = (await redisCommand(sentinel, ['SENTINEL', 'REPLICAS', NAME], 1_000) as unknown[]).map(fieldsOf);
        for (const port of dataNodes.filter((data) => data !== master)) {
          const seen = replicas.find((replica) => Number(replica.get('port')) === port);
          // Not its `master-port`: a sentinel reads a replica's INFO every 10 s, so a demoted master shows the old
          // value (0) that long; the data node's own INFO, below, says whom it replicates.
          if (seen?.get('flags') !== 'slave') return notYet(`sentinel ${sentinel} sees data node ${port} as ${seen?.get('flags') ?? 'unknown'}`);
        }
        const quorum = await tryRedisCommand(sentinel, ['SENTINEL', 'CKQUORUM', NAME], 1_000);
        if (typeof quorum !== 'string' || !quorum.startsWith('OK')) return notYet(`sentinel ${sentinel} has no quorum yet`);
      }
      if (master === undefined || !dataNodes.includes(master)) return notYet(`the reported master ${master} is not a running data node`);
      if ((await infoOf(master, 'replication', 1_000)).get('role') !== 'master') return notYet(`${master} does not answer as master yet`);
      for (const port of dataNodes.filter((data) => data !== master)) {
        const replication = await infoOf(port, 'replication', 1_000);
        if (replication.get('role') !== 'slave' || replication.get('master_port') !== String(master) || replication.get('master_link_status') !== 'up') {
          return notYet(`data node ${port} is ${replication.get('role')} of ${replication.get('master_port')}, link ${replication.get('master_link_status')}`);
        }
      }
      return done(master);
    }, { timeoutMs, intervalMs: 200 });
  }

  /** Signals a data node or a sentinel (SIGKILL/SIGTERM return once it exited). */
  kill(port: number, signal: RedisSignal): Promise<void> {
    return this.group.kill(port, signal);
  }

  command(port: number, ...args: (string | number)[]): Promise<unknown> {
    return redisCommand(port, args);
  }

  /** Kills every process it started and removes their directories; idempotent (also done on process exit). */
  stop(): Promise<void> {
    return this.group.stop();
  }

  private runningSentinels(): number[] {
    return this.sentinelPorts.filter((port) => this.group.get(port).state === 'running');
  }
}

/** Starts the master, its replicas (`--replicaof`), then the sentinels, and resolves once the sentinels see them all. */
export async function startRedisSentinel(options: RedisSentinelOptions = {}): Promise<RedisSentinel> {
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const group = new RedisProcessGroup('sentinel');
  try {
    const masterPort = await startDataNode(group, options, undefined);
    const replicaPorts = await Promise.all(Array.from({ length: options.replicas ?? 2 }, () => startDataNode(group, options, masterPort)));
    await waitUntil('the replicas to sync', async () => {
      for (const port of replicaPorts) {
        const link = (await infoOf(port, 'replication', 1_000)).get('master_link_status');
        if (link !== 'up') return notYet(`replica ${port} has master_link_status:${link}`);
      }
      return done(undefined);
    }, { timeoutMs });
    const sentinelPorts = await Promise.all(Array.from({ length: options.sentinels ?? 3 }, () => startSentinel(group, options, masterPort)));
    const setup = new RedisSentinel(group, [masterPort, ...replicaPorts], sentinelPorts);
    await setup.waitForStable(timeoutMs);
    return setup;
  } catch (error) {
    await group.stop();
    throw error;
  }
}

async function startDataNode(group: RedisProcessGroup, options: RedisSentinelOptions, masterPort: number | undefined): Promise<number> {
  const port = await freeRedisPort({ withBusPort: false });
  await group.start(`data-${port}`, (dir) => ({
    port,
    dir,
    args: [
      '--port', String(port), '--bind', HOST, '--daemonize', 'no', '--save', '', '--appendonly', 'no',
      '--dir', dir, '--logfile', join(dir, 'redis.log'),
      '--repl-diskless-sync-delay', '0', '--enable-debug-command', 'local',
      ...(masterPort === undefined ? [] : ['--replicaof', HOST, String(masterPort)]),
      ...(options.extraArgs ?? []),
    ],
  }));
  return port;
}

async function startSentinel(group: RedisProcessGroup, options: RedisSentinelOptions, masterPort: number): Promise<number> {
  const port = await freeRedisPort({ withBusPort: false });
  await group.start(`sentinel-${port}`, (dir) => {
    // A sentinel rewrites its conf file as it learns the setup: it must be a file of its own, writable.
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(conf, [
      `port ${port}`, `bind ${HOST}`, 'daemonize no', `dir ${dir}`, `logfile ${join(dir, 'redis.log')}`,
      `sentinel monitor ${NAME} ${HOST} ${masterPort} ${options.quorum ?? 2}`,
      `sentinel down-after-milliseconds ${NAME} ${options.downAfterMs ?? 1_000}`,
      `sentinel failover-timeout ${NAME} ${options.failoverTimeoutMs ?? 5_000}`,
      `sentinel parallel-syncs ${NAME} 1`,
      '',
    ].join('\n'));
    return { port, dir, args: [conf, '--sentinel'] };
  });
  return port;
}

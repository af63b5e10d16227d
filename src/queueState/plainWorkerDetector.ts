import type { Logger } from 'pino';
import { mastersOf } from '../redis/clusterNodes';
import { RedisClient } from '../redis/connection';
import type { RegistryEntry } from './registryEntry';

/**
 * Notices plain bullmq Workers consuming a throttled queue, which bypass its throttles: every bullmq
 * worker names its blocking connection `<prefix>:<base64 queue>` (plus `:w:<name>`), so more such
 * connections than live ThrottledWorkers on the queue means some consumer is not throttled.
 * A surplus is reported only once it has lasted `settleMs` (a declaration's time to live): after an outage
 * longer than that, every worker's declaration has lapsed while their connections come back at once, and
 * each worker re-registers only on its next heartbeat, so for a moment live ThrottledWorkers look plain.
 */
export class PlainWorkerDetector {
  private readonly connectionName: string;
  private warnedFor = 0;
  /** When the current surplus was first seen (performance.now()), or undefined while there is none. */
  private surplusSince?: number;

  constructor(
    private readonly client: RedisClient,
    prefix: string,
    private readonly queue: string,
    private readonly logger: Logger,
    private readonly settleMs = 0,
  ) {
    this.connectionName = `${prefix}:${Buffer.from(queue).toString('base64')}`;
  }

  /**
   * How many worker connections consume the queue, from CLIENT LIST (undefined where it is not allowed).
   *
   * CLIENT LIST is node-local. In a Cluster, a bullmq Worker's blocking connection is a Cluster client whose
   * every node connection carries the worker's name (bullmq 6's createBlockingConnection duplicates the
   * Cluster with `redisOptions.connectionName`, as later bullmq 5 releases do; bullmq releases that pass the
   * name to a Cluster's duplicate() as if it were a Redis's leave it unnamed, unseen). Node connections open lazily,
   * on the first command routed to a node: BZPOPMIN on the queue's marker opens the one to the master of the
   * queue's slot, but the client's ready check (CLUSTER INFO) and bullmq's INFO go to a random master first,
   * and a worker that has not yet found the queue drained has not blocked at all. So one worker may show on
   * the queue's master and on another master, or only on another one. Adding the masters' counts would count
   * such a worker twice (and report plain Workers that are not there); asking only the queue's master could
   * miss a worker that never blocked. Every master is asked and the largest count on any one is taken, as
   * bullmq's own Queue.getWorkers() does: never more than the real number, and all of them once the workers
   * have blocked on the queue (they do whenever it runs dry). ThrottledWorkers are counted the same way, so
   * the surplus over live ThrottledWorkers errs towards too few plain Workers, never too many.
   */
  async consumers(): Promise<number | undefined> {
    let lists: string[];
    try {
      const nodes = await mastersOf(this.client);
      // A master that does not answer (down while its replica takes over) is left out: the count errs low.
      const answers = await Promise.allSettled(nodes.map(async (node) => String(await (node as unknown as { client(sub: 'LIST'): Promise<string> }).client('LIST'))));
      lists = answers.flatMap((answer) => (answer.status === 'fulfilled' ? [answer.value] : []));
    } catch {
      return undefined;
    }
    if (lists.length === 0) return undefined;
    return Math.max(0, ...lists.map((list) => this.countIn(list)));
  }

  private countIn(list: string): number {
    let count = 0;
    for (const line of list.split('\n')) {
      const name = /(?:^| )name=(\S*)/.exec(line)?.[1];
      if (name === this.connectionName || name?.startsWith(`${this.connectionName}:w:`)) count++;
    }
    return count;
  }

  /** Logs a warning naming the queue when more workers consume it than ThrottledWorkers declare throttles. */
  async check(entries: readonly RegistryEntry[]): Promise<number> {
    const consumers = await this.consumers();
    if (consumers === undefined) return 0;
    const throttled = entries.filter((entry) => entry.queue === this.queue).length;
    const surplus = Math.max(0, consumers - throttled);
    const now = performance.now();
    this.surplusSince = surplus > 0 ? this.surplusSince ?? now : undefined;
    const plain = this.surplusSince !== undefined && now - this.surplusSince >= this.settleMs ? surplus : 0;
    if (plain > 0 && plain !== this.warnedFor) {
      this.logger.warn(
        { queue: this.queue, plainWorkers: plain, throttledWorkers: throttled },
        `queue '${this.queue}' has ${plain} worker(s) that are not ThrottledWorkers: they take jobs without asking the throttles`,
      );
    }
    this.warnedFor = plain;
    return plain;
  }
}

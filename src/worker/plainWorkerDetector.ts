import type { Logger } from 'pino';
import { RedisClient } from '../redis/connection';
import { RegistryEntry } from './queueConfig';

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

  /** How many worker connections consume the queue, from CLIENT LIST (undefined where it is not allowed). */
  async consumers(): Promise<number | undefined> {
    let list: string;
    try {
      list = String(await (this.client as unknown as { client(sub: 'LIST'): Promise<string> }).client('LIST'));
    } catch {
      return undefined;
    }
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

import type { Logger } from 'pino';
import { RedisClient } from '../redis/connection';
import { RegistryEntry } from './queueConfig';

/**
 * Notices plain bullmq Workers consuming a throttled queue, which bypass its throttles: every bullmq
 * worker names its blocking connection `<prefix>:<base64 queue>` (plus `:w:<name>`), so more such
 * connections than live ThrottledWorkers on the queue means some consumer is not throttled.
 */
export class PlainWorkerDetector {
  private readonly connectionName: string;
  private warnedFor = 0;

  constructor(
    private readonly client: RedisClient,
    prefix: string,
    private readonly queue: string,
    private readonly logger: Logger,
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
    const plain = Math.max(0, consumers - throttled);
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

import IORedis, { type RedisOptions } from 'ioredis';
import type { RedisClient } from './connection';

/** What a majority of the sentinels say of a node. */
export type SentinelVerdict = 'master' | 'not-master' | 'unknown';

/** How long each sentinel is given to answer one question. */
const ANSWER_MS = 500;

/** The Sentinel settings of an ioredis client ({ sentinels, name, ... }), or undefined when it is no Sentinel client. */
export function sentinelSettingsOf(client: RedisClient): SentinelSettings | undefined {
  const options = (client as { options?: RedisOptions }).options;
  const sentinels = options?.sentinels;
  if (!options || !Array.isArray(sentinels) || sentinels.length === 0 || !options.name) return undefined;
  return {
    // ioredis adds the sentinels it discovers to this list (updateSentinels): a majority of what it knows now.
    sentinels: () => (options.sentinels ?? []).map((s) => ({ host: s.host ?? '127.0.0.1', port: s.port ?? 26379 })),
    name: options.name,
    connection: { username: options.sentinelUsername, password: options.sentinelPassword, tls: options.sentinelTLS },
  };
}

/** A SentinelVouch for a Sentinel client, undefined for any other (a Cluster, a plain connection). */
export function sentinelVouchOf(client: RedisClient): SentinelVouch | undefined {
  const settings = sentinelSettingsOf(client);
  return settings ? new SentinelVouch(settings) : undefined;
}

export interface SentinelSettings {
  readonly sentinels: () => { host: string; port: number }[];
  readonly name: string;
  readonly connection: Pick<RedisOptions, 'username' | 'password' | 'tls'>;
}

/**
 * Asks the sentinels whether a node is the master they agree on. A master that lost its last replica cannot be
 * told, from inside, from a master whose only replica was promoted while it was cut off or frozen: the first may
 * deliver, the second must not (its successor counts without its deliveries). Only the sentinels know, and only
 * a majority of them can have promoted another node. So a call such a node ran may start once a majority of the
 * sentinels, asked after the call, name that node (by run id) as a master none of them thinks down: the call ran
 * before any promotion those sentinels could take part in, and the hold that follows a promotion covers it
 * (docs/cluster.md). Questions are shared: calls that ran before a question was sent wait for its answer, so a
 * worker asks about once per round trip to the sentinels, whatever its rate of calls.
 */
export class SentinelVouch {
  private asking?: { sentAt: number; runid: string; answer: Promise<SentinelVerdict> };

  constructor(private readonly settings: SentinelSettings) {}

  /** The verdict on the node `runid` for a call whose reply came at `repliedAt` (performance.now()). */
  async verdict(runid: string, repliedAt: number): Promise<SentinelVerdict> {
    for (let asking = this.asking; asking; asking = this.asking) {
      if (asking.sentAt >= repliedAt && asking.runid === runid) return asking.answer;
      // Sent before this call's reply came (it may not cover the call), or about another node: ask anew after it.
      await asking.answer;
      if (this.asking === asking) this.asking = undefined;
    }
    const entry = { sentAt: performance.now(), runid, answer: this.ask(runid) };
    this.asking = entry;
    try {
      return await entry.answer;
    } finally {
      if (this.asking === entry) this.asking = undefined;
    }
  }

  private async ask(runid: string): Promise<SentinelVerdict> {
    const sentinels = this.settings.sentinels();
    const answers = await Promise.all(sentinels.map((address) => this.askOne(address, runid)));
    const majority = Math.floor(sentinels.length / 2) + 1;
    if (answers.filter((a) => a === 'master').length >= majority) return 'master';
    if (answers.filter((a) => a === 'not-master').length >= majority) return 'not-master';
    return 'unknown';
  }

  /** One sentinel's view: 'master' when it names this run id as its master and thinks it neither down nor failing over. */
  private async askOne(address: { host: string; port: number }, runid: string): Promise<SentinelVerdict> {
    const sentinel = new IORedis({
      ...this.settings.connection, host: address.host, port: address.port,
      lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null,
      connectTimeout: ANSWER_MS, commandTimeout: ANSWER_MS,
    });
    sentinel.on('error', () => undefined);
    try {
      await sentinel.connect();
      const flat = (await sentinel.call('SENTINEL', 'MASTER', this.settings.name)) as unknown[];
      const fields = new Map<string, string>();
      for (let i = 0; i + 1 < flat.length; i += 2) fields.set(String(flat[i]), String(flat[i + 1]));
      const named = fields.get('runid');
      // A sentinel that has not read the master's INFO yet (just after a failover) names no run id: no answer.
      if (!named) return 'unknown';
      if (named !== runid) return 'not-master';
      return fields.get('flags') === 'master' ? 'master' : 'unknown';
    } catch {
      return 'unknown';
    } finally {
      sentinel.disconnect();
    }
  }
}

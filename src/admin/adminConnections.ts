import { Queue } from 'bullmq';
import { ThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { closeClient, ConnectionInput, openClient, OwnedClient, RedisClient } from '../redis/connection';
import { redisTimeMs } from '../redis/redisClock';

/**
 * What ThrottleAdmin opens and closes: the queues' Redis, the grantor's when apart, a script runner on each, and the
 * bullmq Queue objects it asks bullmq's job counts and states of.
 */
export class AdminConnections {
  readonly connection: OwnedClient;
  readonly grantorConnection?: OwnedClient;
  private readonly queues = new Map<string, Queue>();
  private scriptRunner?: ScriptRunner;
  private namespaceScriptRunner?: ScriptRunner;

  /** Opens both connections with ioredis' maxRetriesPerRequest: null, so a call waits out a reconnect instead of failing. */
  constructor(private readonly keys: ThrottleKeys, connection: ConnectionInput, grantor?: { connection: ConnectionInput }) {
    this.connection = openClient(connection, { maxRetriesPerRequest: null });
    if (grantor) this.grantorConnection = openClient(grantor.connection, { maxRetriesPerRequest: null });
  }

  /** The queues' Redis. */
  get client(): RedisClient {
    return this.connection.client;
  }

  /** The throttle namespace's Redis: the registry, the counters, the bucket indexes. */
  get ns(): RedisClient {
    return this.grantorConnection?.client ?? this.connection.client;
  }

  get runner(): ScriptRunner {
    this.scriptRunner ??= new ScriptRunner(this.client);
    return this.scriptRunner;
  }

  get nsRunner(): ScriptRunner {
    if (!this.grantorConnection) return this.runner;
    this.namespaceScriptRunner ??= new ScriptRunner(this.grantorConnection.client);
    return this.namespaceScriptRunner;
  }

  /**
   * Redis time (ms) on the node that holds `key`, to compare with times written to keys of its slot: in a
   * Cluster, the namespace's node for the registry and the throttles' counters, the queue's for its own keys.
   */
  nowMs(key: string = this.keys.registryAlive): Promise<number> {
    return key === this.keys.registryAlive ? redisTimeMs(this.ns, key, this.nsRunner) : redisTimeMs(this.client, key, this.runner);
  }

  queueFor(name: string): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, { connection: this.client as never, prefix: this.keys.prefix });
      // Connection errors surface where the admin's calls fail; bullmq would also print each one.
      queue.on('error', () => undefined);
      this.queues.set(name, queue);
    }
    return queue;
  }

  /** Closes the Queue objects opened and the connections made; an ioredis client passed in stays open, for its owner. */
  async close(): Promise<void> {
    for (const queue of this.queues.values()) await queue.close().catch(() => undefined);
    await closeClient(this.connection);
    if (this.grantorConnection) await closeClient(this.grantorConnection);
  }
}

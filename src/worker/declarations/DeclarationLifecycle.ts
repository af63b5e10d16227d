import type { Logger } from 'pino';
import { EffectiveThrottle } from '../../declarations/mergeDeclarations';
import { ThrottleSpec } from '../../declarations/ThrottleSpec';
import { QueueThrottleKeys, ThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../../lua/scripts';
import { DeclarationRegistry } from './declarationRegistry';
import { publishQueueConfig, PublishOutcome } from './publishQueueConfig';
import { effectiveThrottle, entriesDeclaring, entriesOfQueue, QueueConfig, queueConfigFrom } from '../../queueState/queueConfig';
import type { RegistryEntry } from '../../queueState/registryEntry';

/** What a worker's declaration lifecycle needs of its gate. */
export interface LifecycleContext {
  readonly queue: string;
  readonly prefix: string;
  readonly throttles: readonly ThrottleSpec[];
  readonly declarationTtlMs: number;
  readonly logger: Logger;
  readonly workerId: string;
  readonly keys: ThrottleKeys;
  readonly queueKeys: QueueThrottleKeys;
  /** bullmq's marker of the queue, which a new config generation wakes the queue's workers through. */
  readonly markerKey: string;
  closed(): boolean;
  /** Another worker published a new throttle set: held jobs of the old one are classified again. */
  onGenerationChange(): void;
}

/**
 * One worker's throttle declarations over its life: registered in the namespace's registry and refreshed
 * on each heartbeat (a crashed worker's lapse), what they add up to published for the queue (in its slot)
 * and for each throttle (in the namespace's), and withdrawn on close so that a limit this worker alone
 * held lifts at once.
 */
export class DeclarationLifecycle {
  private registry?: DeclarationRegistry;
  private runners?: { queue: ScriptRunner; namespace: ScriptRunner };
  /** The queue's effective throttles as last adopted. */
  config?: QueueConfig;
  /** The registry as last read: the plain-worker check compares against it. */
  liveEntries: RegistryEntry[] = [];

  constructor(private readonly context: LifecycleContext) {}

  /** Registers with `entry` on first use; `queue` reaches the queue's slot, `namespace` the namespace's. */
  open(queue: ScriptRunner, namespace: ScriptRunner, entry: RegistryEntry): void {
    this.runners ??= { queue, namespace };
    this.registry ??= new DeclarationRegistry(namespace, this.context.keys, entry, this.context.declarationTtlMs);
  }

  takeLapsedQueues(): string[] {
    return this.registry?.takeLapsedQueues() ?? [];
  }

  /** A start that failed for good: the registration goes at once. */
  async abandon(): Promise<void> {
    await this.registry?.withdraw().catch(() => undefined);
  }

  /** Re-reads the live declarations, publishes what they add up to, and adopts the queue's config. */
  async refresh(starting: boolean): Promise<void> {
    const { logger, queue, prefix } = this.context;
    for (let attempt = 0; ; attempt++) {
      if (!this.registry || this.context.closed()) return;
      const { entries, lapsed, version } = await this.registry.refresh();
      if (lapsed.length > 0) logger.warn({ queue, workers: lapsed }, 'declarations of workers that stopped refreshing them lapsed');
      let config: QueueConfig;
      try {
        config = queueConfigFrom(entries, queue, prefix);
      } catch (error) {
        if (starting) throw error;
        // Somebody else's conflicting declaration: it fails its own start; keep enforcing what we had.
        logger.error({ queue, err: error }, 'conflicting throttle declarations seen');
        return;
      }
      // Refused even after a fresh read: the registry's version went back (its keys were lost), so publish.
      const published = await this.publish(this.runners!, config, version, attempt >= 2);
      // Refused: the registry changed since this read (another worker registered); read it again.
      if (published === 'stale') continue;
      this.adopt(config, entries, published === 'changed', starting);
      return;
    }
  }

  private adopt(config: QueueConfig, entries: RegistryEntry[], changed: boolean, starting: boolean): void {
    this.liveEntries = entries;
    const previous = this.config;
    this.config = config;
    if (changed || (previous && previous.gen !== config.gen)) {
      this.context.logger.info(
        { queue: this.context.queue, gen: config.gen, throttles: config.throttles.map((t) => ({ name: t.name, limits: t.limits, missing: t.missing })) },
        'effective throttles changed',
      );
    }
    if (!starting && previous && previous.gen !== config.gen) this.context.onGenerationChange();
  }

  private publish(
    runners: { queue: ScriptRunner; namespace: ScriptRunner }, config: QueueConfig | undefined, version: number, force: boolean,
    throttles: readonly EffectiveThrottle[] = config?.throttles ?? [], leaving = false,
  ): Promise<PublishOutcome> {
    const { keys, queueKeys, declarationTtlMs, workerId } = this.context;
    return publishQueueConfig({ queue: runners.queue, throttles: runners.namespace, keys, queueKeys, markerKey: this.context.markerKey }, {
      config, version, force, throttles, stateTtlMs: declarationTtlMs * 3,
      // The queue's own record of this worker lapses a little before the registry's (both stay far longer than
      // a heartbeat): once the registry says a worker lapsed, releaseHeld finds it lapsed on the queue's side too.
      worker: { id: workerId, ttlMs: leaving ? 0 : declarationTtlMs - Math.min(100, Math.floor(declarationTtlMs / 10)) },
    });
  }

  /**
   * Withdraws this worker's declarations through connections that outlive the worker's own, and publishes
   * what the remaining ones add up to. Resolves to whether no live worker of the queue is left, and the
   * queues (of this prefix) whose every worker's declarations lapsed meanwhile.
   */
  async withdraw(queue: ScriptRunner, namespace: ScriptRunner): Promise<{ lastOfQueue: boolean; lapsedQueues: string[] }> {
    const { keys, declarationTtlMs, throttles, prefix } = this.context;
    const registry = new DeclarationRegistry(namespace, keys, this.registry!.entry, declarationTtlMs);
    const { entries: remaining, version } = await registry.withdraw();
    const config = entriesOfQueue(remaining, this.context.queue, prefix).length > 0 ? queueConfigFrom(remaining, this.context.queue, prefix) : undefined;
    // Throttles this worker shared with other queues: their limits now come from the declarations left.
    const others = throttles
      .map((t) => t.name)
      .filter((name) => !config?.throttles.some((t) => t.name === name))
      .filter((name) => entriesDeclaring(remaining, name).length > 0)
      .map((name) => effectiveThrottle(remaining, name));
    await this.publish({ queue, namespace }, config, version, false, [...(config?.throttles ?? []), ...others], true);
    return { lastOfQueue: config === undefined, lapsedQueues: [...this.takeLapsedQueues(), ...registry.takeLapsedQueues()] };
  }
}

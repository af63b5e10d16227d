import type { Logger } from 'pino';
import { ThrottleSpec } from '../../declarations/ThrottleSpec';
import { ThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../../lua/scripts';
import { RedisClient } from '../../redis/connection';
import { declarationData } from '../declarations/declarationRegistry';
import { DeliveryMemory, declaredLongest } from './deliveryMemory';
import { DeliveryReporter } from './deliveryReporter';
import { NamespaceIdentity } from '../../recovery/namespaceIdentity';
import type { RegistryEntry } from '../../queueState/registryEntry';

/** learnIdentity reads the record at most this often while it knows no identity. */
const LEARN_EVERY_MS = 1_000;

/** What a heartbeat gives the worker's recovery: where the namespace is, and what the worker is now. */
export interface RecoveryBeat {
  readonly runner: ScriptRunner;
  readonly client: RedisClient;
  readonly keys: ThrottleKeys;
  readonly liveEntries: readonly RegistryEntry[];
  /** Exact delivery: the namespace's node counted this worker's deliveries itself. */
  readonly exact: boolean;
  /** Every delivery came with a ticket (a start deadline), so the memory is whole. */
  readonly vouches: boolean;
  /** The queue's classes look again now. */
  readonly wake: () => Promise<void>;
  /** Leased delivery: tells a grantor's gather what the queue delivered (Delivery.tellGather). */
  readonly tellGather: () => Promise<void>;
}

/**
 * What a worker keeps so that the node counting its namespace can lose its counts (a restart from an older
 * state, a failover to a replica that lacked them) without the throttles holding for their longest window: the
 * node's identity it saw (src/recovery/namespaceIdentity.ts), what it delivered and which workers it saw (deliveryMemory.ts),
 * told to the namespace's workers' gather on a heartbeat (deliveryReporter.ts).
 */
export class NamespaceRecovery {
  private readonly identity = new NamespaceIdentity();
  private readonly memory: DeliveryMemory;
  private readonly reporter: DeliveryReporter;

  constructor(workerId: string, declarations: readonly ThrottleSpec[], logger: Logger, queue: string) {
    this.memory = new DeliveryMemory(workerId);
    this.reporter = new DeliveryReporter(this.memory, workerId, declaredLongest(declarations.map(declarationData)), logger, queue);
  }

  /** The namespace's node identity last seen recorded ('' for none): every delivery call and lease request sends it. */
  get knownNodeId(): string {
    return this.identity.known;
  }

  /** Exact workers and leased queues this worker saw alive lately (DeliveryMemory.seenAlive): a leased queue's report names them. */
  seenAlive(): (readonly [string, string])[] {
    return this.memory.seenAlive();
  }

  /** An exact delivery call's tickets: what it delivered, counted with the call's h (hMs) unless a ticket says longer. */
  delivered(tickets: readonly string[] | undefined, repliedAt?: number, hMs = 0): void {
    if (tickets) this.memory.noteDeliveries(tickets, repliedAt, hMs);
  }

  /** A delivery put back for starting late (its tokens given back): the memory no longer vouches for it. */
  putBack(ticket: string, repliedAt: number): void {
    this.memory.forget(ticket, repliedAt);
  }

  /** A started job's tokens count with a longer lease than its delivery call's (ProcessorStarts.started). */
  countedLonger(leaseMs: number): void {
    this.memory.noteLongerLease(leaseMs);
  }

  /**
   * Reads the node identity as soon as the first deliveries recorded it, rather than at the next heartbeat (a
   * third of the declarations' TTL later): a node that lost the record within those seconds would otherwise
   * take the namespace for a new one. Only while none is known, at most once a second (a record that is not
   * there yet costs the delivery path one read a second, not one a call); a failed read waits for the next.
   */
  learnIdentity(client: RedisClient, keys: ThrottleKeys): void {
    if (this.identity.known) return;
    const now = performance.now();
    if (now < this.nextLearnAt) return;
    this.nextLearnAt = now + LEARN_EVERY_MS;
    client.hget(keys.grantorRecord, 'id').then((id) => this.identity.note(id), () => undefined);
  }

  private nextLearnAt = 0;

  async beat(beat: RecoveryBeat): Promise<void> {
    // One read of the namespace's record serves both: its node's identity, and a workers' gather.
    const [id, hold, gathering] = await beat.client.hmget(beat.keys.grantorRecord, 'id', 'hold', 'gathering');
    this.identity.note(id);
    this.memory.notePeers(beat.liveEntries);
    if (beat.exact) await this.reporter.check(beat.runner, beat.keys, { hold, gathering }, beat.vouches, beat.wake);
    // A leased queue with nothing to lease would not ask the grantor, and so not report: it tells on its heartbeat.
    else if (gathering) await beat.tellGather();
  }
}

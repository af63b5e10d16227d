import type { Logger } from 'pino';
import { InvalidOptionError } from '../errors/InvalidOptionError';
import { QueueThrottleKeys, ThrottleKeys } from '../keys/ThrottleKeys';
import { LuaScript, ScriptRunner } from '../lua/scripts';
import { DEFAULT_LEASE_MS, START_DEADLINE_CEILING_MS } from '../options/defaults';
import { sentinelVouchOf } from '../redis/sentinelVouch';
import { ReplicaConfirmation } from '../redis/ReplicaConfirmation';
import { ConnectionInput, openClient, OwnedClient, RedisClient } from '../redis/connection';
import { Delivery } from './Delivery';
import { deliveryMode } from './deliveryMode';
import { DeliveryContext, ExactDelivery } from './ExactDelivery';
import { InFlightRelease } from './inFlightRelease';
import { LeasedDelivery } from './leased/LeasedDelivery';

/** What choosing and building a worker's delivery needs. */
export interface DeliverySetup {
  readonly queue: string;
  readonly prefix: string;
  readonly workerId: string;
  readonly keys: ThrottleKeys;
  readonly queueKeys: QueueThrottleKeys;
  readonly logger: Logger;
  readonly scripts?: Map<string, LuaScript>;
  readonly leaseMs?: number | 'auto';
  readonly durableRedis: boolean;
  readonly grantor?: { connection: ConnectionInput };
  /** The worker's connection and a runner on it. */
  readonly client: RedisClient;
  readonly runner: ScriptRunner;
  /** Exact delivery's h with leaseMs 'auto', as the worker chooses it at each call (src/worker/lateStarts/startDeadlines.ts). */
  readonly startDeadlineMs: () => number;
  /** The rest of each delivery call (bullmq's keys, lock duration, limiter), given the lease chosen here. */
  readonly call: (leaseMs: number) => ReturnType<DeliveryContext>;
  /** Encoded names of the throttles the queue declares now. */
  readonly throttles: () => string[];
  /** Encoded names of those with a concurrency. */
  readonly concurrencyThrottles: () => string[];
  /** A leased worker's hold of concurrency lapses this long after its last renewal (lockDuration + stalledInterval). */
  readonly holdMs: () => number;
  readonly concurrency: () => number;
  readonly onTokens: () => void;
  readonly report: (what: string, error: unknown) => void;
  /** The namespace's node identity the worker saw recorded ('' for none: src/recovery/namespaceIdentity.ts). */
  readonly knownNodeId: () => string;
  /** Exact workers and leased queues the worker saw alive lately, with their declarations' longest windows (DeliveryMemory.seenAlive). */
  readonly seenAlive: () => readonly (readonly [string, string])[];
}

export interface ChosenDelivery {
  delivery: Delivery;
  /** h, or the longest h the worker may choose (exact delivery with leaseMs 'auto'). */
  leaseMs: number;
  /** Runs in the namespace's slot: the worker's own connection, or the grantor option's. */
  namespaceRunner: ScriptRunner;
  /** The grantor option's connection, which the worker owns and closes. */
  grantorConnection?: OwnedClient;
}

/** Exact where the queue's keys and its throttles' share a slot, leased otherwise (deliveryMode.ts). */
export function createDelivery(setup: DeliverySetup): ChosenDelivery {
  const { grantor, logger, queue, keys, queueKeys } = setup;
  const grantorConnection = grantor ? openClient(grantor.connection, { maxRetriesPerRequest: null }) : undefined;
  const namespaceRunner = grantorConnection ? new ScriptRunner(grantorConnection.client, setup.scripts) : setup.runner;
  const mode = deliveryMode(setup.client, Boolean(grantor), keys, queueKeys);
  const chosenHere = mode === 'exact' && (setup.leaseMs === 'auto' || setup.leaseMs === undefined);
  const leaseMs = typeof setup.leaseMs === 'number' ? setup.leaseMs : mode === 'leased' ? DEFAULT_LEASE_MS : chosenHere ? START_DEADLINE_CEILING_MS : 0;
  if (mode === 'leased' && leaseMs <= 0) {
    throw new InvalidOptionError(
      `ThrottledWorker('${queue}'): leaseMs ${leaseMs} cannot lease tokens, and this queue's throttles are counted in another `
      + `${grantor ? 'Redis (the grantor option)' : 'Redis Cluster slot'}: leave leaseMs out (${DEFAULT_LEASE_MS} ms) or give it more than 0.`,
    );
  }
  logger.info({ queue, delivery: mode, leaseMs: chosenHere ? 'chosen by the worker' : leaseMs }, `${mode} delivery`);
  const call = chosenHere ? () => setup.call(setup.startDeadlineMs()) : () => setup.call(leaseMs);
  // One vouch per client: without a grantor connection, the queue's and the grantor's are the same client.
  const queueVouch = sentinelVouchOf(setup.client);
  const grantorConfirmation = new ReplicaConfirmation(() => keys.grantorRecord, grantorConnection ? sentinelVouchOf(grantorConnection.client) : queueVouch);
  const runner = () => setup.runner;
  const delivery = mode === 'exact' ? new ExactDelivery(runner, call, queueKeys.node, new InFlightRelease(runner, queueKeys, logger), keys, queueVouch) : new LeasedDelivery({
    queue: runner,
    grantor: () => ({ runner: namespaceRunner, slotKey: keys.registryVersion, throttlePrefix: keys.throttlePrefix, confirmation: grantorConfirmation }),
    call,
    leaseMs,
    durableRedis: setup.durableRedis,
    queueId: `${setup.prefix}:${queue}`,
    throttles: setup.throttles,
    concurrencyThrottles: setup.concurrencyThrottles,
    holdMs: setup.holdMs,
    workerId: setup.workerId,
    workersKey: queueKeys.workers,
    queueBase: queueKeys.base,
    concurrency: setup.concurrency,
    onTokens: setup.onTokens,
    report: setup.report,
    knownNodeId: setup.knownNodeId,
    seenAlive: setup.seenAlive,
    wakeKeys: () => ({ wakeups: queueKeys.wakeups, leaseRoom: queueKeys.leaseRoom, marker: call().bullmqKeys.marker }),
  });
  return { delivery, leaseMs, namespaceRunner, grantorConnection };
}

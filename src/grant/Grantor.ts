import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidGrantError } from '../errors/InvalidGrantError';
import { ThrottleKeys } from '../keys/ThrottleKeys';
import { sentinelVouchOf } from '../redis/sentinelVouch';
import { ReplicaConfirmation } from '../redis/ReplicaConfirmation';
import { LuaScript } from '../lua/scripts';
import { ScriptRunner } from '../lua/scripts';
import { closeClient, ConnectionInput, openClient, OwnedClient, RedisClient } from '../redis/connection';
import { DEFAULT_PREFIX } from '../options/defaults';
import { assertNamespaceUsable } from '../keys/hashSlotTag';
import { GRANTED, runGrantDeliveries } from '../lua/calls/grantDeliveries';
import { runReturnTokens } from '../lua/calls/returnTokens';
import { decodeTokenId, encodeTokenId } from './tokenId';
import { Delivery, GrantResult } from './types';
import { GrantRecovery } from './grantRecovery';
import { planGrantBatch } from './grantBatchPlan';

/** Most copies one grantAvailable call decides (one script call: its arguments grow with them). */
const MAX_AVAILABLE = 1000;
/**
 * `wait` asks again at least this often while a gather holds its buckets (the namespace's node lost its counts):
 * the gather ends once everyone it expects told, sooner than the latest end the refusal names.
 */
const GATHER_POLL_MS = 100;

/**
 * Options of `new Grantor(options)`.
 *
 * @example
 * ```ts
 * const grantor = new Grantor({ connection: 'redis://127.0.0.1:6379', throttlePrefix: 'payments', leaseMs: 100 });
 * ```
 */
export interface GrantorOptions {
  /** ioredis options, a redis:// URL, or an ioredis client (which the Grantor then never closes). Required. */
  connection: ConnectionInput;
  /**
   * Key prefix, as BullMQ's `prefix`: the throttle namespace unless throttlePrefix says otherwise.
   * @default 'bull'
   */
  prefix?: string;
  /**
   * The throttle namespace, as ThrottledWorker's `throttlePrefix`: throttles of one name share limits within it.
   * @default prefix
   */
  throttlePrefix?: string;
  /**
   * Redis never loses a write it acknowledged: after it restarts or a replica takes over, limits resume after
   * leaseMs and a 100 ms margin rather than after their window (see ThrottledWorker's option).
   * @default false
   */
  durableRedis?: boolean;
  /**
   * h: how long a granted token may still be spent after it was asked for. Each grant then counts against
   * windows of W + h, so that tokens spent up to h late still never exceed N in any window of W. A whole number
   * of milliseconds, 0 or more; 0: each token is spent when it is granted.
   * @default 0
   */
  leaseMs?: number;
}

/**
 * Internal: tests swap in scripts built with a steerable clock. Not part of the public API.
 * @internal
 */
export interface GrantorInternals {
  /** Internal, for tests: the Lua scripts to run instead of the built ones, by name. */
  scripts?: Map<string, LuaScript>;
  /** Internal, for tests: extra trailing arguments for every script call (a clock offset). */
  extraArgs?: () => (string | number)[];
}

/**
 * Options of `Grantor.wait`.
 *
 * @example
 * ```ts
 * const shutdown = new AbortController(); // aborted when the app stops: the wait rejects
 * const result = await grantor.wait([{ throttle: stripe }], { maxWaitMs: 2000, signal: shutdown.signal });
 * if (!result.granted) console.log(`no room within 2 s; next at ${result.retryAt}`);
 * ```
 */
export interface WaitOptions {
  /**
   * The longest wait (ms, measured on this process's clock), seed 002's WaitMaxDuration: when the delivery's room
   * would come later than that, `wait` resolves with the refusal at once (its `retryAt` says when), rather than
   * sleep and be refused at the end; otherwise it sleeps until the room and tries again, and resolves with the
   * last refusal once this has passed (other grants can take the room first). While a gather holds a throttle
   * after a Redis node lost its counts, when its room returns is not known: it waits until this has passed.
   * Undefined: the shortest `maxWait` the delivery's throttles declare (Throttle.maxWait), or as long as it takes.
   * @default undefined
   */
  maxWaitMs?: number;
  /**
   * Cancels the wait: once aborted, `wait` rejects (with the signal's reason, or an AbortError while it
   * sleeps) and asks for nothing more.
   * @default undefined
   */
  signal?: AbortSignal;
}

/** A batch's answer with the Redis time at which it was decided. */
export interface GrantBatch {
  /** The Redis time (TIME) at which the batch was decided, in microseconds since the Unix epoch. */
  nowUs: number;
  /** One result per delivery, in the order of the deliveries. */
  results: GrantResult[];
}

/**
 * Grants deliveries against sliding-window throttles held in Redis: at most N deliveries in any window W,
 * for every limit of every bucket, whatever the number of processes asking. It remembers what it granted, so that
 * a Redis node that loses the counts (a restart from an older state, a failover) is told them again within
 * seconds (src/grant/grantRecovery.ts): from its first grant until `close()`, it reads the namespace's record
 * once a second.
 */
export class Grantor {
  /** The Redis key names this Grantor counts in: its prefix and throttle namespace. */
  readonly keys: ThrottleKeys;
  /** h, from the options: how long after its grant a token may still be spent (ms); 0 when none was given. */
  readonly leaseMs: number;
  private readonly durableRedis: boolean;
  private readonly connection: OwnedClient;
  private readonly runner: ScriptRunner;
  /** Grants are answered once a replica holds them, when the node has replicas (src/redis/ReplicaConfirmation.ts). */
  private readonly confirmation: ReplicaConfirmation;
  /** What it granted, told to a gather when the node loses its counts (src/grant/grantRecovery.ts). */
  private readonly recovery: GrantRecovery;

  /**
   * Opens a Redis connection from `connection`, or uses the client given there.
   *
   * @param options - The connection, prefix, throttle namespace, durability and lease.
   * @param internals - Internal, for tests; leave it out.
   * @throws InvalidGrantError when `leaseMs` is not a whole number of milliseconds, 0 or more.
   * @throws InvalidOptionError when the throttle namespace holds an empty hash tag '{}' before any other.
   */
  constructor(options: GrantorOptions, internals: GrantorInternals = {}) {
    const leaseMs = options.leaseMs ?? 0;
    if (!Number.isSafeInteger(leaseMs) || leaseMs < 0) {
      throw new InvalidGrantError(`Grantor: leaseMs ${String(options.leaseMs)} must be a whole number of milliseconds, 0 or more.`);
    }
    this.leaseMs = leaseMs;
    this.durableRedis = options.durableRedis ?? false;
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    this.keys = new ThrottleKeys(prefix, options.throttlePrefix ?? prefix);
    assertNamespaceUsable('Grantor', 'throttlePrefix (by default the prefix)', this.keys.namespace, this.keys.namespaceBase);
    this.connection = openClient(options.connection);
    this.runner = new ScriptRunner(this.connection.client, internals.scripts, internals.extraArgs);
    this.confirmation = new ReplicaConfirmation(() => this.keys.grantorRecord, sentinelVouchOf(this.connection.client));
    this.recovery = new GrantRecovery(leaseMs, this.runner, this.connection.client, this.keys);
  }

  /** The Redis client the Grantor sends its calls through: the one given as `connection`, or the one it opened. */
  get client(): RedisClient {
    return this.connection.client;
  }

  /**
   * Decides each delivery in order: granted with all its tokens counted, or refused with nothing counted.
   * A refusal is a result, not an error. One Lua script decides the whole batch.
   *
   * @example
   * await grantor.grant([[{ throttle: stripe }, { throttle: perCustomer, key: ['acme'] }]]);
   * @param deliveries - The deliveries, each the list of buckets it draws from.
   * @returns One result per delivery, in order.
   * @throws InvalidGrantError as `grantBatch`.
   * @throws DeliveryVoidedError as `grantBatch`.
   */
  async grant(deliveries: readonly Delivery[]): Promise<GrantResult[]> {
    return (await this.grantBatch(deliveries)).results;
  }

  /**
   * As `grant`, with the Redis time at which the batch was decided.
   *
   * @param deliveries - The deliveries, each the list of buckets it draws from.
   * @returns The Redis time of the decision and one result per delivery, in order.
   * @throws InvalidGrantError when a delivery is not an array, a throttle has no limit or rate, declares a
   * concurrency, is given a key it does not have or a key of the wrong length, or a cost is not a positive whole
   * number or exceeds a limit's N or the rate's burst. Nothing is granted then.
   * @throws DeliveryVoidedError when the Redis master that counted the grants was replaced before a replica
   * acknowledged them: they do not count, and no id was handed out.
   */
  async grantBatch(deliveries: readonly Delivery[]): Promise<GrantBatch> {
    return (await this.decide(deliveries)).batch;
  }

  /** As grantBatch, with the epoch of a gather that held a counter of the batch ('' when none did). */
  private async decide(deliveries: readonly Delivery[]): Promise<{ batch: GrantBatch; gathering: string }> {
    const { counters, draws, records, windowsOf, throttles } = planGrantBatch(this.keys, deliveries);
    const reply = await runGrantDeliveries(this.runner, {
      leaseMs: this.leaseMs, counters, deliveries: draws, throttlePrefix: this.keys.throttlePrefix, durableRedis: this.durableRedis,
      ...this.recovery.standing(throttles),
    }, this.confirmation);
    await this.recovery.granted(windowsOf.filter((_windows, i) => reply.retryAt[i] === GRANTED), reply.gathering);
    const { nowUs } = reply;
    const grantedAt = Math.floor(nowUs / 1000);
    const nonce = randomBytes(9).toString('base64url');
    const results = deliveries.map((_delivery, i): GrantResult => {
      const retryAt = Number(reply.retryAt[i]);
      if (retryAt !== GRANTED) return { granted: false, retryAt };
      const id = encodeTokenId({ nonce: `${nonce}.${i}`, grantUs: nowUs, leaseMs: this.leaseMs, throttles: records[i] });
      return { granted: true, id, grantedAt };
    });
    return { batch: { nowUs, results }, gathering: reply.gathering };
  }

  /**
   * Returns tokens that will not be spent: they stop counting at once. A second return of an id is a no-op,
   * and so is returning a token whose window has passed. Resolves to how many (token, throttle) counts stopped.
   * A rate keeps returned tokens counted: only window limits take a return back.
   *
   * @param ids - Ids of granted results, from any Grantor on the same Redis and throttle namespace.
   * @returns How many (token, throttle) pairs stopped counting now.
   * @throws InvalidGrantError when an id is not a token id from `grant`.
   */
  async returnTokens(ids: readonly string[]): Promise<number> {
    return (await this.returnBatch(ids)).returned.filter(Boolean).length;
  }

  /**
   * As returnTokens, with the Redis time of the return and one verdict per (token, throttle) in order.
   *
   * @param ids - Ids of granted results, from any Grantor on the same Redis and throttle namespace.
   * @returns The Redis time of the return and the verdicts.
   * @throws InvalidGrantError when an id is not a token id from `grant`.
   */
  async returnBatch(ids: readonly string[]): Promise<{
    /** The Redis time of the return, in microseconds since the Unix epoch; 0 when no id named a throttle. */
    nowUs: number;
    /**
     * One verdict per (token, throttle), in the order of `ids` and of each token's throttles: true when that
     * count stopped now; false when it was returned already, its window has passed, or it counts in a rate only.
     */
    returned: boolean[];
  }> {
    const grants = ids.map(decodeTokenId).flatMap((token) => token.throttles.map(({ name, bucket, windows, count }) => ({
      name, bucket, nonce: token.nonce, grantUs: token.grantUs, leaseMs: token.leaseMs, count: count ?? 1, windows,
    })));
    if (grants.length === 0) return { nowUs: 0, returned: [] };
    return runReturnTokens(this.runner, { keys: this.keys, grants });
  }

  /**
   * Takes what is available now (seed 002's TakeAvailable): up to `max` copies of the delivery, each granted
   * whole, as many as fit at this moment and no more, without waiting. Resolves to the granted ids (return
   * them as any other) and, when fewer than `max` fit, when the next one could (ms, Redis clock).
   *
   * @example
   * const { ids, retryAt } = await grantor.grantAvailable([{ throttle: stripe }], 20);
   * @param delivery - The buckets each copy draws from.
   * @param max - The most copies to grant, a whole number from 1 to 1000.
   * @returns The granted ids and when the next copy could fit.
   * @throws InvalidGrantError when `max` is out of range, or as `grantBatch` for the delivery.
   * @throws DeliveryVoidedError as `grantBatch`.
   */
  async grantAvailable(delivery: Delivery, max: number): Promise<{
    /** The ids of the copies granted, 0 to `max` of them. */
    ids: string[];
    /**
     * When fewer than `max` were granted, the earliest time the next copy could fit, in ms since the Unix epoch
     * on the Redis clock. Null when all `max` were granted.
     */
    retryAt: number | null;
  }> {
    if (!Number.isSafeInteger(max) || max < 1 || max > MAX_AVAILABLE) {
      throw new InvalidGrantError(`grantAvailable(delivery, ${String(max)}): max must be a whole number from 1 to ${MAX_AVAILABLE}.`);
    }
    const results = await this.grant(Array.from({ length: max }, () => delivery));
    const ids = results.flatMap((result) => (result.granted ? [result.id] : []));
    const refused = results.find((result): result is Extract<GrantResult, { granted: false }> => !result.granted);
    return { ids, retryAt: refused ? refused.retryAt : null };
  }

  /**
   * Grants one delivery as soon as it fits, sleeping until the moment it could (never polling), or resolves
   * not granted: at once when the room would come after maxWaitMs, or once maxWaitMs has passed.
   *
   * @example
   * const result = await grantor.wait([{ throttle: stripe }], { maxWaitMs: 2000 });
   * @param delivery - The buckets the delivery draws from.
   * @param options - How long to wait at most, and a signal to cancel.
   * @returns The grant, or the last refusal once `maxWaitMs` has passed.
   * @throws InvalidGrantError as `grantBatch`.
   * @throws DeliveryVoidedError as `grantBatch`.
   */
  async wait(delivery: Delivery, options: WaitOptions = {}): Promise<GrantResult> {
    // Without maxWaitMs, the shortest maxWait its throttles declare (Throttle.maxWait) bounds the wait.
    const declared = Math.min(...delivery.map((request) => request.throttle.maxWaitMs ?? Infinity));
    const maxWaitMs = options.maxWaitMs ?? (Number.isFinite(declared) ? declared : undefined);
    const deadline = maxWaitMs === undefined ? Infinity : Date.now() + maxWaitMs;
    for (;;) {
      options.signal?.throwIfAborted();
      const { batch: { nowUs, results }, gathering } = await this.decide([delivery]);
      const [result] = results;
      if (result.granted) return result;
      const roomMs = Math.max(1, Math.ceil(result.retryAt - nowUs / 1000));
      const untilRoomMs = gathering ? Math.min(roomMs, GATHER_POLL_MS) : roomMs;
      const leftMs = deadline - Date.now();
      // Room that comes only after the deadline is not waited for (seed 002's WaitMaxDuration). While a gather
      // holds the throttle, its end is not known, so the wait goes on until the deadline.
      if (leftMs <= 0 || (!gathering && roomMs > leftMs)) return result;
      await sleep(Math.min(untilRoomMs, leftMs), undefined, { signal: options.signal });
    }
  }

  /**
   * Stops the Grantor's check for a gather and closes the Redis connection it opened. A client given as
   * `connection` stays open: its owner closes it. Tokens granted stay counted; should the node counting them lose
   * them before they left their windows, nobody can tell a gather about them any more, and the throttles they were
   * granted in hold for their longest window. Use the Grantor no more after this.
   */
  async close(): Promise<void> {
    await this.recovery.close();
    await closeClient(this.connection);
  }
}

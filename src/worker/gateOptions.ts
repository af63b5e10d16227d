import type { FairnessSpec } from '../declarations/Fairness';
import type { Logger } from 'pino';
import { ThrottleSpec } from '../declarations/ThrottleSpec';
import { LuaScript } from '../lua/scripts';
import { ConnectionInput } from '../redis/connection';
import { AttributesFunction } from '../queueState/jobClassifier';
import { GatedQueue } from '../bullmq/BullmqAdapter';
import { EmitThrottleEvent } from './notices/throttleEvents';

export interface GateOptions {
  queue: string;
  prefix: string;
  /** The throttle namespace: throttles of one name are shared within it. */
  namespace: string;
  throttles: readonly ThrottleSpec[];
  attributes?: AttributesFunction;
  /** The queue's fairness key and weights, as this worker declares them (checkFairness). */
  fairness?: FairnessSpec;
  logger: Logger;
  declarationTtlMs: number;
  /** h; undefined: 'auto' in exact delivery (the worker chooses h), DEFAULT_LEASE_MS in leased delivery. */
  leaseMs?: number | 'auto';
  /** See ThrottledWorkerOptions.durableRedis. */
  durableRedis?: boolean;
  /** Throttles counted on another Redis (leased delivery); by default on the worker's own connection. */
  grantor?: { connection: ConnectionInput };
  /** The worker's concurrency as it is now. */
  concurrency: () => number;
  /** False while requests must not wait for room (the worker is paused). */
  mayWait: () => boolean;
  /** Internal: tests swap in scripts built with a steerable clock. */
  scripts?: Map<string, LuaScript>;
  /** Emits `error` on the worker (GateFailures decides when). */
  onError?: (error: Error) => void;
  /** Emits the throttle events on the worker (src/worker/notices/throttleEvents.ts). */
  emit?: EmitThrottleEvent;
  /** Whether a lock token is one bullmq's main loop fetches with (getNextJob's are the caller's own). */
  mainLoopToken?: (token: string) => boolean;
  /** Emits bullmq's `drained` on the worker. */
  emitDrained?: () => void;
}

/** bullmq's side of the worker and what the gate reads of the worker's options, as ThrottleGate.attach takes them. */
export interface AttachedQueue {
  readonly backend: GatedQueue;
  readonly workerName: string;
  readonly lockDuration: number;
  readonly stalledInterval: number;
  /** The worker's bullmq `limiter` option: the delivery script applies it as bullmq's moveToActive does. */
  readonly limiter?: { max: number; duration: number };
}

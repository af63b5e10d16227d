import type { ThrottlePause } from '../admin/throttlePauses';

/**
 * The events a ThrottledWorker emits about the throttles it declares, besides bullmq's own. Each is read on the
 * worker's heartbeat (declarationTtlMs / 3, 5 s by default) and emitted when it changes, once per worker.
 */
export interface ThrottleHeldEvent {
  throttle: string;
  /** Jobs of this worker's queue waiting on the throttle's full buckets now (0: none waits any more). */
  waiting: number;
  /** How long the one waiting longest has waited (ms; null when none waits). */
  oldestWaitingMs: number | null;
}

export interface ThrottlePausedEvent {
  throttle: string;
  /** The pauses in force (the whole throttle's, and how many buckets are paused on their own); null: none any more. */
  pause: ThrottlePause | null;
}

export interface ThrottleRecoveryEvent {
  throttle: string;
  /**
   * The hold after the Redis node counting the throttle restarted or a replica took over: until when (ms, Redis
   * clock) and why (`window`: deliveries may be lost, it holds for its longest window; `gather`: until the live
   * workers told what they delivered; `lease`: until the previous node's tokens are spent); null: it ended.
   */
  hold: { until: number; kind: 'window' | 'lease' | 'gather' } | null;
}

/** Listeners of the throttle events, by name: `worker.on('throttle:held', (e) => ...)`. */
export interface ThrottleEventListeners {
  /** Jobs of the queue began waiting on the throttle's full buckets, or none waits any more. */
  'throttle:held': (event: ThrottleHeldEvent) => void;
  /** The throttle was paused (ThrottleAdmin.pause, the CLI, a RetryAfterError), or its pauses ended. */
  'throttle:paused': (event: ThrottlePausedEvent) => void;
  /** The throttle is held after a Redis restart or failover, or that hold ended. */
  'throttle:recovery': (event: ThrottleRecoveryEvent) => void;
}

export type ThrottleEventName = keyof ThrottleEventListeners;

/** How the worker's parts emit these events (the worker's own emit). */
export type EmitThrottleEvent = <E extends ThrottleEventName>(event: E, payload: Parameters<ThrottleEventListeners[E]>[0]) => void;

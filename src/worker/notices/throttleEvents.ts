import type { ThrottlePause } from '../../queueState/throttlePauses';

/**
 * The payload of `'throttle:held'`. A ThrottledWorker emits it when jobs of its queue begin waiting on a full
 * bucket of a throttle in effect on the queue, and again when none waits any more. It does not fire for
 * a change of how many wait.
 *
 * The throttle events (this one, {@link ThrottlePausedEvent}, {@link ThrottleRecoveryEvent}) come besides
 * bullmq's own. Each is read on the worker's heartbeat (declarationTtlMs / 3, 5 s by default) and emitted when
 * it changes, by every worker of the queue, so the app sees it once per worker.
 */
export interface ThrottleHeldEvent {
  /** The throttle's name. */
  throttle: string;
  /** Jobs of this worker's queue waiting on the throttle's full buckets now (0: none waits any more). */
  waiting: number;
  /** How long the one waiting longest has waited (ms; null when none waits). */
  oldestWaitingMs: number | null;
}

/**
 * The payload of `'throttle:paused'`. A ThrottledWorker emits it when a throttle in effect on its queue is
 * paused (ThrottleAdmin.pause, the CLI's pause, a RetryAfterError), when its pauses change (another bucket
 * paused on its own, a new end for the whole throttle's pause), and when the last of them ends or is resumed.
 * Read on the heartbeat, as {@link ThrottleHeldEvent}.
 */
export interface ThrottlePausedEvent {
  /** The throttle's name. */
  throttle: string;
  /** The pauses in force (the whole throttle's, and how many buckets are paused on their own); null: none any more. */
  pause: ThrottlePause | null;
}

/**
 * The payload of `'throttle:recovery'`. A ThrottledWorker emits it when a throttle in effect on its queue is held
 * because the Redis node counting it restarted or a replica took over (deliveries counted just before may be
 * lost), when that hold's end moves, and once more when the hold ends. Jobs of the throttle wait meanwhile;
 * other jobs go on. Read on the heartbeat, as {@link ThrottleHeldEvent}; docs/cluster.md has the details.
 */
export interface ThrottleRecoveryEvent {
  /** The throttle's name. */
  throttle: string;
  /**
   * The hold after the Redis node counting the throttle restarted or a replica took over: until when (ms, Redis
   * clock) and why (`window`: deliveries may be lost, it holds for its longest window; `gather`: until the live
   * workers told what they delivered; `lease`: until the previous node's tokens are spent); null: it ended.
   */
  hold: {
    /** Until when the hold lasts (ms since the epoch, on the Redis clock of the node counting the throttle). */
    until: number;
    /**
     * Why it holds: `'window'` for the throttle's longest window (what was lost cannot be known); `'gather'`
     * until the live workers and leased queues have told what they delivered; `'lease'` until the tokens the
     * previous node leased are spent or expire (`durableRedis`).
     */
    kind: 'window' | 'lease' | 'gather';
  } | null;
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

/** The name of a throttle event: `'throttle:held'`, `'throttle:paused'` or `'throttle:recovery'`. */
export type ThrottleEventName = keyof ThrottleEventListeners;

/** How the worker's parts emit these events (the worker's own emit). */
export type EmitThrottleEvent = <E extends ThrottleEventName>(event: E, payload: Parameters<ThrottleEventListeners[E]>[0]) => void;

import type { Logger } from 'pino';
import { readRecoveryHold } from '../../queueState/recoveryHold';
import { EffectiveThrottle } from '../../declarations/mergeDeclarations';
import { ThrottleKeys } from '../../keys/ThrottleKeys';
import { RedisClient } from '../../redis/connection';
import { EmitThrottleEvent } from './throttleEvents';

/**
 * Logs, once per hold, that a throttle this worker declares is held after the Redis node counting it
 * restarted or a replica took over (lua/includes/recoveryHold.lua), and until when: its jobs wait
 * meanwhile, while unthrottled jobs go on. Read on each heartbeat; `throttle:recovery` is emitted when a hold
 * begins and when it ends.
 */
export class RecoveryHoldNotice {
  private readonly said = new Set<string>();
  /** Throttles held at the last heartbeat: an end is a change too. */
  private readonly held = new Set<string>();

  constructor(private readonly logger: Logger, private readonly queue: string, private readonly emit: EmitThrottleEvent = () => undefined) {}

  async check(client: RedisClient, keys: ThrottleKeys, throttles: readonly EffectiveThrottle[]): Promise<void> {
    if (throttles.length === 0) return;
    const [seconds, micros] = await client.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    for (const throttle of throttles) {
      const hold = await readRecoveryHold(client, keys, throttle, now);
      if (!hold) {
        if (this.held.delete(throttle.name)) this.emit('throttle:recovery', { throttle: throttle.name, hold: null });
        continue;
      }
      this.held.add(throttle.name);
      const said = `${throttle.name}@${hold.until}`;
      if (this.said.has(said)) continue;
      this.said.add(said);
      this.emit('throttle:recovery', { throttle: throttle.name, hold: { until: hold.until, kind: hold.kind } });
      this.logger.warn({ queue: this.queue, throttle: throttle.name, until: new Date(hold.until).toISOString(), hold: hold.kind },
        hold.kind === 'window'
          ? `throttle '${throttle.name}' pauses for its longest window: the Redis node counting it restarted or a replica took over, and deliveries counted just before may be lost`
          : hold.kind === 'gather'
            ? `throttle '${throttle.name}' pauses until the live workers and queues have told what they delivered before the Redis node counting it restarted or a replica took over`
            : `throttle '${throttle.name}' pauses while the tokens of the Redis node that counted it before a restart or failover are spent or expire`);
    }
  }
}

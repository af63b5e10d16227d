import type { Logger } from 'pino';
import { readPauses, ThrottlePause } from '../../queueState/throttlePauses';
import { EffectiveThrottle } from '../../declarations/mergeDeclarations';
import { ThrottleKeys } from '../../keys/ThrottleKeys';
import { RedisClient } from '../../redis/connection';
import { EmitThrottleEvent } from './throttleEvents';

/**
 * Logs when a throttle this worker declares is paused (ThrottleAdmin.pause, RetryAfterError), how, and when it
 * is resumed or its pauses end, and emits `throttle:paused`: read on each heartbeat, on change only.
 */
export class PauseNotice {
  private readonly said = new Map<string, string>();

  constructor(private readonly logger: Logger, private readonly queue: string, private readonly emit: EmitThrottleEvent = () => undefined) {}

  async check(client: RedisClient, keys: ThrottleKeys, throttles: readonly EffectiveThrottle[]): Promise<void> {
    if (throttles.length === 0) return;
    const [seconds, micros] = await client.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    for (const { name } of throttles) {
      const pause = await readPauses(client, keys, name, now);
      const state = describe(pause);
      if ((this.said.get(name) ?? '') === state) continue;
      this.said.set(name, state);
      if (pause) this.logger.info({ queue: this.queue, throttle: name, paused: pause }, `throttle '${name}' paused: ${state}`);
      else this.logger.info({ queue: this.queue, throttle: name }, `throttle '${name}' no longer paused`);
      this.emit('throttle:paused', { throttle: name, pause });
    }
  }
}

function describe(pause: ThrottlePause | null): string {
  if (!pause) return '';
  const all = pause.all ? `every bucket ${pause.all.until === null ? 'until resumed' : `until ${new Date(pause.all.until).toISOString()}`}` : '';
  const buckets = pause.buckets > 0 ? `${pause.buckets} bucket(s) on their own` : '';
  return [all, buckets].filter(Boolean).join('; ');
}

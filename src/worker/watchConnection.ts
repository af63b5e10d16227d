import type { Logger } from 'pino';
import { RedisClient } from '../redis/connection';

/** Logs a worker connection's losses and recoveries, once each (ioredis emits 'reconnecting' per attempt). */
export function watchConnection(client: RedisClient, logger: Logger, queue: string): void {
  let lost = false;
  client.on('reconnecting', () => {
    if (!lost) logger.warn({ queue }, 'lost the Redis connection; reconnecting');
    lost = true;
  });
  client.on('ready', () => {
    if (lost) logger.info({ queue }, 'reconnected to Redis');
    lost = false;
  });
}

import type { EventEmitter } from 'node:events';
import type { GatedQueue } from '../bullmq/BullmqAdapter';
import { RedisClient } from '../redis/connection';
import { redisErrorKind } from '../redis/redisErrorKind';

/**
 * The backend's client once its connection is ready, or the first error the connection meets that waiting
 * cannot heal: with a wrong password ioredis reconnects (and fails) forever, so the client never becomes
 * ready and a start that only awaited it would never end.
 */
export function clientOrRefusal(backend: GatedQueue): Promise<RedisClient> {
  const ready = backend.client as unknown as Promise<RedisClient>;
  const connection = (backend as unknown as { connection?: EventEmitter }).connection;
  if (typeof connection?.on !== 'function') return ready;
  return new Promise<RedisClient>((resolve, reject) => {
    const onError = (error: unknown) => {
      if (redisErrorKind(error) !== 'permanent') return;
      connection.off('error', onError);
      reject(error);
    };
    connection.on('error', onError);
    ready.then(
      (client) => { connection.off('error', onError); resolve(client); },
      (error: unknown) => { connection.off('error', onError); reject(error); },
    );
  });
}

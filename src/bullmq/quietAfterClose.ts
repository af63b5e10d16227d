import type { EventEmitter } from 'node:events';

/**
 * bullmq's RedisConnection reports a failed start by emitting 'error' when its start settles; closed while it
 * is still starting (a worker that failed to start and is closed at once), it removes its listeners first, and
 * bullmq 5's start then rejects with "Connection is closed" into an 'error' event nobody listens to any more,
 * which Node turns into an uncaught exception a moment after close(). An 'error' that no listener is left for is
 * dropped here instead: the connection is closed, and nothing is lost by it. While listeners remain, errors go to
 * them as before.
 */
export function quietAfterClose(worker: object): void {
  for (const field of ['connection', 'blockingConnection']) {
    const connection = (worker as Record<string, unknown>)[field] as EventEmitter | undefined;
    if (!connection || typeof connection.emit !== 'function') continue;
    const emit = connection.emit.bind(connection);
    connection.emit = ((event: string | symbol, ...args: unknown[]) =>
      (event === 'error' && connection.listenerCount('error') === 0 ? false : emit(event, ...args))) as typeof connection.emit;
  }
}

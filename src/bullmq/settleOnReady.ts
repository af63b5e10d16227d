import type { EventEmitter } from 'node:events';

interface Client extends EventEmitter {
  status: string;
}

/**
 * Wraps bullmq's reconnect of a worker's blocking connection so that it settles once the client is ready.
 *
 * Why: bullmq 6 resets the blocking connection whenever its watchdog finds a BZPOPMIN overdue (a failover
 * under way) and awaits the client's connect(). An ioredis Cluster's connect() never settles when its ready
 * check finds `cluster_state:fail` (the failed master not yet replaced): it reconnects with a new connect()
 * of its own, which becomes ready, while the promise bullmq awaits stays pending. The worker's main loop then
 * waits on it for ever, the queue's jobs undelivered (seen in test/cluster/grantorFailover). The client's own
 * `ready` event is the moment bullmq waits for, so the wrapped call settles on whichever comes first.
 */
export function settleOnReady(reconnect: () => Promise<void>, client: () => Promise<unknown> | unknown): () => Promise<void> {
  return async () => {
    const redis = (await client()) as Client | undefined;
    if (!redis || typeof redis.once !== 'function') return reconnect();
    let onReady!: () => void;
    const ready = new Promise<void>((resolve) => {
      onReady = resolve;
      redis.once('ready', onReady);
    });
    const reconnecting = reconnect();
    // Left pending for ever in the case above; should it reject later, nobody waits on it any more.
    reconnecting.catch(() => undefined);
    try {
      await Promise.race([reconnecting, ready]);
    } finally {
      redis.removeListener('ready', onReady);
    }
  };
}

import type { Logger } from 'pino';
import { RedisClient } from './connection';

/** ioredis's message for a command or connect on a connection that is over (its CONNECTION_CLOSED_ERROR_MSG). */
const CONNECTION_CLOSED = 'Connection is closed.';
const FIRST_RETRY_MS = 100;
const MOST_RETRY_MS = 5_000;

interface SentinelClientInternals {
  status: string;
  options?: { sentinels?: unknown };
  /** Set by the owner's disconnect()/quit() (ioredis 4 to 6): a connection its owner ends is left ended. */
  manuallyClosing?: boolean;
  connect(): Promise<void>;
  on(event: string, listener: (...args: never[]) => void): unknown;
}

/**
 * Reconnects an ioredis Sentinel client that ioredis itself ended in the middle of a reconnect, for as long as
 * `inUse()` says the worker still runs on it.
 *
 * Why: when a master fails, the client reconnects and asks the sentinels for the new one; if its failover
 * detector (`failoverDetector: true`, which docs/redis.md asks for) hears `+switch-master` while that question is
 * out, the detector's disconnect of the connector makes the connect fail with "Connection is closed." and ioredis
 * sets the client's status to `end`: no retry ever follows, every later command fails at once, and the worker's
 * deliveries, completions and stalled-job checks stop for good (redis/ioredis#1683; reproduced in
 * test/cluster/sentinelWorker.test.ts; its signs seen once in CI: a worker that delivered nothing after a
 * kill -9 of its master, its errors "Connection is closed."). Only that end is undone: one the owner asked for
 * (disconnect or quit: `manuallyClosing`, or an end after `close`), or a Sentinel retry strategy that gives up,
 * is left as it is.
 */
export function reviveEndedConnection(client: RedisClient, logger: Logger, queue: string, inUse: () => boolean): void {
  const redis = client as unknown as SentinelClientInternals;
  if (!redis.options?.sentinels) return;
  let lastStatus = redis.status;
  let lastError = '';
  let retryMs = FIRST_RETRY_MS;
  for (const status of ['connecting', 'connect', 'ready', 'close', 'reconnecting']) {
    redis.on(status, () => {
      lastStatus = status;
      if (status === 'ready') retryMs = FIRST_RETRY_MS;
    });
  }
  redis.on('error', (error: Error) => { lastError = error.message; });
  redis.on('end', () => {
    const endedByConnector = lastStatus === 'connecting' && lastError === CONNECTION_CLOSED && redis.manuallyClosing !== true;
    lastStatus = 'end';
    if (!endedByConnector || !inUse()) return;
    const inMs = retryMs;
    retryMs = Math.min(retryMs * 2, MOST_RETRY_MS);
    logger.warn({ queue, reconnectInMs: inMs }, 'ioredis ended the worker\'s Sentinel connection while it reconnected (its failover detector disconnected it while it asked the sentinels for the master; redis/ioredis#1683): reconnecting it');
    setTimeout(() => {
      // The owner may have closed the worker, or connected the client again, meanwhile.
      if (redis.status !== 'end' || !inUse()) return;
      redis.connect().catch(() => undefined);
    }, inMs).unref();
  });
}

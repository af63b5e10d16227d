import { InvalidGrantError } from '../errors/InvalidGrantError';
import { UnknownQueueError } from '../errors/UnknownQueueError';
import { UnknownThrottleError } from '../errors/UnknownThrottleError';
import { QueueStillThrottledError } from '../errors/QueueStillThrottledError';

/** A command line that cannot be run as written (a bad option value, a bad key value). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** Redis could not be reached, or the connection was lost. */
export class RedisUnreachableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

/** Whether an error comes from the connection to Redis rather than from what was asked. */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  return error.name === 'MaxRetriesPerRequestError'
    || /Connection is closed|Stream isn't writeable|enableOfflineQueue|connect ETIMEDOUT|ECONNREFUSED|ECONNRESET|Failed to refresh slots cache|None of startup nodes is available/.test(error.message);
}

/** The one line printed for an error (without the 'bullmq-throttle: ' lead). */
export function describeError(error: unknown, redisUrl?: string): string {
  if (error instanceof UsageError || error instanceof UnknownQueueError || error instanceof UnknownThrottleError
    || error instanceof InvalidGrantError || error instanceof RedisUnreachableError || error instanceof QueueStillThrottledError) {
    return oneLine(error.message);
  }
  if (isConnectionError(error)) {
    return oneLine(`lost the connection to Redis${redisUrl ? ` at ${redisUrl}` : ''}: ${(error as Error).message}`);
  }
  if (error instanceof Error && error.name === 'ReplyError' && /^(MOVED|ASK) /.test(error.message)) {
    // Only where INFO was refused, so that the CLI could not tell it was talking to a cluster node.
    return oneLine(`Redis${redisUrl ? ` at ${redisUrl}` : ''} is a Redis Cluster node that does not hold the key asked for (${error.message}): `
      + 'run again with --cluster (or give several --redis seed nodes).');
  }
  if (error instanceof Error && error.name === 'ReplyError') return oneLine(`Redis answered with an error: ${error.message}`);
  return oneLine(error instanceof Error ? error.message : String(error));
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

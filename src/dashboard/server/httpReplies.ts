import type { ServerResponse } from 'node:http';
import { DashboardRequestError } from '../../errors/DashboardRequestError';
import { InvalidGrantError } from '../../errors/InvalidGrantError';
import { InvalidOptionError } from '../../errors/InvalidOptionError';
import { InvalidThrottleError } from '../../errors/InvalidThrottleError';
import { QueueStillThrottledError } from '../../errors/QueueStillThrottledError';
import { UnknownQueueError } from '../../errors/UnknownQueueError';
import { UnknownThrottleError } from '../../errors/UnknownThrottleError';
import type { WireError } from '../wire';

/** The HTTP status an error is answered with: what was asked is wrong (4xx), or the dashboard or Redis failed (5xx). */
export function statusOf(error: unknown): number {
  if (error instanceof DashboardRequestError) return error.status;
  // Values that ThrottleAdmin's checks refuse: a bad limit, a bad pause length, a key of the wrong shape.
  if (error instanceof InvalidOptionError || error instanceof InvalidThrottleError || error instanceof InvalidGrantError) return 400;
  if (error instanceof UnknownThrottleError || error instanceof UnknownQueueError) return 404;
  if (error instanceof QueueStillThrottledError) return 409;
  return 500;
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

export function sendError(res: ServerResponse, error: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body: WireError = {
    error: error instanceof Error ? error.message : String(error),
    kind: error instanceof Error ? error.name : 'Error',
  };
  sendJson(res, statusOf(error), body);
}

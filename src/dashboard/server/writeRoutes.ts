import type { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import type { LimitInput } from '../../admin/limitOverrides';
import type { KeyValue } from '../../declarations/Key';
import { DashboardRequestError } from '../../errors/DashboardRequestError';
import { keyValues, objectBody, optionalMs, requiredName } from './requestValues';

/** The POST endpoints, by path under api/: each goes through ThrottleAdmin and its checks, nothing else. */
export const WRITE_PATHS = ['pause', 'resume', 'limits', 'limits/clear', 'release'] as const;
export type WritePath = (typeof WRITE_PATHS)[number];

export function isWritePath(path: string): path is WritePath {
  return (WRITE_PATHS as readonly string[]).includes(path);
}

/** `key` absent: the whole throttle; null or an array: one bucket. */
function bucketOf(body: Record<string, unknown>): { key?: KeyValue[] | null } {
  return 'key' in body ? { key: keyValues('key', body.key) } : {};
}

export async function runWrite(admin: ThrottleAdmin, path: WritePath, rawBody: unknown, writes: boolean): Promise<unknown> {
  if (!writes) {
    throw new DashboardRequestError(403, `the dashboard is read-only: ${path} is refused. Create it with { writes: true } (the CLI: dashboard --writes) to allow pauses, limits and releases.`);
  }
  const body = objectBody(rawBody);
  switch (path) {
    case 'pause': {
      const throttle = requiredName('throttle', body.throttle);
      const forMs = optionalMs('forMs', body.forMs);
      const { until } = await admin.pause(throttle, { ...bucketOf(body), ...(forMs === undefined ? {} : { forMs }) });
      return { throttle, ...bucketOf(body), until };
    }
    case 'resume': {
      const throttle = requiredName('throttle', body.throttle);
      return { throttle, ...bucketOf(body), lifted: await admin.resume(throttle, bucketOf(body)) };
    }
    case 'limits': {
      const throttle = requiredName('throttle', body.throttle);
      const ttlMs = optionalMs('ttlMs', body.ttlMs);
      // setLimits checks the limits themselves (a positive N, a window), as it does a declaration's.
      await admin.setLimits(throttle, body.limits as LimitInput[], { ...bucketOf(body), ...(ttlMs === undefined ? {} : { ttlMs }) });
      return { throttle, ...bucketOf(body), limits: body.limits, ttlMs: ttlMs ?? null };
    }
    case 'limits/clear': {
      const throttle = requiredName('throttle', body.throttle);
      await admin.clearLimits(throttle, bucketOf(body));
      return { throttle, ...bucketOf(body), cleared: true };
    }
    case 'release': {
      const queue = requiredName('queue', body.queue);
      return { queue, released: await admin.releaseHeld(queue) };
    }
  }
}

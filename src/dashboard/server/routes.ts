import type { ServerResponse } from 'node:http';
import type { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { DashboardRequestError } from '../../errors/DashboardRequestError';
import type { RedisClient } from '../../redis/connection';
import type { WireBucketPage, WireOverviewWithHistory } from '../wire';
import { bucketState } from '../state';
import { readBucketJobs } from './bucketJobs';
import type { DeliveryHistory } from './history';
import { sendError, sendJson } from './httpReplies';
import { readJsonBody } from './jsonBody';
import type { DashboardPath, MountedRequest } from './requestPath';
import { keyFromQuery, requiredName } from './requestValues';
import type { OverviewSampler } from './sampler';
import type { EventStreams } from './sse';
import { dashboardAssets } from './staticAssets';
import { isWritePath, runWrite } from './writeRoutes';

/** Jobs listed per queue on a bucket's page. */
const BUCKET_JOBS_SHOWN = 20;

export interface DashboardContext {
  admin: ThrottleAdmin;
  /** The queues' Redis, for the jobs waiting on a bucket. */
  client: RedisClient;
  sampler: OverviewSampler;
  history: DeliveryHistory;
  streams: EventStreams;
  writes: boolean;
  sampleEveryMs: number;
  historySamples: number;
}

// The page loads only its own files and talks only to its own origin.
const PAGE_HEADERS = {
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'self'",
};

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

async function serveStatic(res: ServerResponse, name: string, base: string): Promise<void> {
  const file = (await dashboardAssets()).get(name);
  if (!file) throw new DashboardRequestError(404, `no dashboard file '${name}'.`);
  // Relative links in the page resolve under the mount path, wherever that is.
  const body = name === 'index.html' ? Buffer.from(file.body.toString('utf8').replace('<base href="./">', `<base href="${escapeAttribute(base)}/">`)) : file.body;
  res.writeHead(200, { ...PAGE_HEADERS, 'content-type': file.type, 'content-length': body.length });
  res.end(body);
}

async function overview(context: DashboardContext): Promise<WireOverviewWithHistory> {
  // A page opened right after a restart gets the history read back from Redis, not an empty one.
  await context.sampler.restored;
  const current = await context.sampler.current();
  return { ...current, ...context.history.snapshot(), sampleEveryMs: context.sampleEveryMs, historySamples: context.historySamples };
}

async function bucketPage(context: DashboardContext, query: URLSearchParams): Promise<WireBucketPage> {
  const throttle = requiredName('throttle', query.get('throttle'));
  const key = keyFromQuery(query.get('key'));
  const [bucket, jobs] = await Promise.all([
    context.admin.throttleBucket(throttle, key),
    readBucketJobs(context.admin, context.client, throttle, key, BUCKET_JOBS_SHOWN),
  ]);
  // A recovery hold is the throttle's: the sampler's last read (about a second old) says whether one is on.
  const recovering = Boolean(context.sampler.latest?.throttles.find((t) => t.name === throttle)?.recoveryHold);
  return { bucket, jobs, state: bucketState(bucket, recovering) };
}

/** Answers one request under the dashboard's path. Resolves false when the path is none of its own. */
export async function route(context: DashboardContext, req: MountedRequest, res: ServerResponse, where: DashboardPath): Promise<boolean> {
  const method = req.method ?? 'GET';
  const { path, base, query } = where;
  try {
    if (path === '') {
      // Without the slash the page's relative links would resolve one level up.
      const search = query.toString();
      res.writeHead(308, { location: `${base}/${search ? `?${search}` : ''}` });
      res.end();
      return true;
    }
    const api = path.startsWith('/api/') ? path.slice('/api/'.length) : undefined;
    if (api !== undefined && isWritePath(api)) {
      if (method !== 'POST') throw new DashboardRequestError(405, `api/${api} takes POST with a JSON body, not ${method}.`);
      sendJson(res, 200, await runWrite(context.admin, api, await readJsonBody(req), context.writes));
      return true;
    }
    if (method !== 'GET' && method !== 'HEAD') {
      if (api === undefined && path !== '/') return false;
      throw new DashboardRequestError(405, `${path} takes GET, not ${method}.`);
    }
    switch (api ?? path) {
      case '/':
      case '/index.html': await serveStatic(res, 'index.html', base); return true;
      case '/app.js':
      case '/app.css':
      case '/app.js.map':
      case '/app.css.map': await serveStatic(res, path.slice(1), base); return true;
      case 'overview': sendJson(res, 200, await overview(context)); return true;
      case 'events': context.streams.open(res, { event: 'overview', data: await context.sampler.current() }); return true;
      case 'bucket': sendJson(res, 200, await bucketPage(context, query)); return true;
      case 'job': sendJson(res, 200, await context.admin.explainJob(requiredName('queue', query.get('queue')), requiredName('id', query.get('id')))); return true;
      default:
        if (api === undefined) return false;
        throw new DashboardRequestError(404, `no dashboard endpoint api/${api}: the page reads api/overview, api/events, api/bucket and api/job.`);
    }
  } catch (error) {
    sendError(res, error);
    return true;
  }
}

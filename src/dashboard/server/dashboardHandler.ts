import type { IncomingMessage, ServerResponse } from 'node:http';
import { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { DashboardRequestError } from '../../errors/DashboardRequestError';
import { InvalidOptionError } from '../../errors/InvalidOptionError';
import { closeClient, ConnectionInput, openClient } from '../../redis/connection';
import { DeliveryHistory } from './history';
import { HistoryStore } from './historyStore';
import { sendError } from './httpReplies';
import { readOverview } from './readOverview';
import { dashboardPath, normalBasePath } from './requestPath';
import { route } from './routes';
import { OverviewSampler } from './sampler';
import { EventStreams } from './sse';

/**
 * The options of createDashboardHandler: where to read the throttles, where the page is mounted, and whether
 * it may change them. docs/dashboard.md has the table.
 * @example
 * ```ts
 * app.use('/admin/throttles', requireAdmin, createDashboardHandler({ connection, writes: true }));
 * ```
 */
export interface DashboardOptions {
  /** ioredis options, a redis:// URL, a Cluster's seeds (`{ startupNodes }`), or an ioredis client (never closed by the dashboard). */
  connection: ConnectionInput;
  /**
   * bullmq's key prefix of the queues.
   * @default 'bull'
   */
  prefix?: string;
  /**
   * The throttle namespace, as the workers' `throttlePrefix`.
   * @default the prefix
   */
  throttlePrefix?: string;
  /**
   * The workers' `grantor`, when they count their throttles on another Redis (see ThrottleAdmin's option). The
   * charts' history is kept there too.
   * @default none: the throttles are read on `connection`
   */
  grantor?: {
    /**
     * The Redis that counts the throttles: ioredis options, a redis:// URL, a Cluster's seeds
     * (`{ startupNodes }`), or an ioredis client (never closed by the dashboard).
     */
    connection: ConnectionInput;
  };
  /**
   * Where the dashboard is mounted, when the framework does not say: '/throttles' behind Fastify's
   * `reply.raw`. Express's `app.use('/throttles', handler)` says it itself (req.baseUrl); default: the root.
   * @default Express's `req.baseUrl`, else the root
   */
  basePath?: string;
  /**
   * Allow pauses, resumes, limit overrides and releases of held jobs from the page; without it, a write is
   * answered 403.
   * @default false (read-only)
   */
  writes?: boolean;
  /**
   * Queues to show even with no live ThrottledWorker (to see, or release, what a crashed worker left held).
   * @default none: the queues with a live ThrottledWorker
   */
  queues?: string[];
  /**
   * How often the statistics are sampled for the charts and sent to open pages (ms).
   * @default 1000
   */
  sampleEveryMs?: number;
  /**
   * Samples kept per limit for the charts, in memory and in Redis (3600: an hour at one a second).
   * @default 3600
   */
  historySamples?: number;
}

/** A request handler for node:http, Express (`app.use(path, handler)`) or Fastify (`reply.raw`). */
export interface DashboardHandler {
  (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): void;
  /** Stops sampling, ends the open event streams and closes the connections the dashboard opened. */
  close(): Promise<void>;
}

function positiveWhole(option: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidOptionError(`createDashboardHandler: ${option} ${String(value)} must be a positive whole number, such as ${fallback}.`);
  }
  return value;
}

function checkedOptions(options: DashboardOptions) {
  if (options.writes !== undefined && typeof options.writes !== 'boolean') {
    throw new InvalidOptionError(`createDashboardHandler: writes ${JSON.stringify(options.writes)} must be true or false.`);
  }
  if (options.basePath !== undefined && (typeof options.basePath !== 'string' || !/^(\/[^/?#]+)*\/?$/.test(options.basePath))) {
    throw new InvalidOptionError(`createDashboardHandler: basePath ${JSON.stringify(options.basePath)} must be a path such as '/throttles' (or '' for the root).`);
  }
  if (options.queues !== undefined && !(Array.isArray(options.queues) && options.queues.every((q) => typeof q === 'string' && q.length > 0))) {
    throw new InvalidOptionError(`createDashboardHandler: queues ${JSON.stringify(options.queues)} must be an array of queue names.`);
  }
  return {
    writes: options.writes === true,
    basePath: options.basePath === undefined ? undefined : normalBasePath(options.basePath),
    sampleEveryMs: positiveWhole('sampleEveryMs', options.sampleEveryMs, 1000),
    historySamples: positiveWhole('historySamples', options.historySamples, 3600),
  };
}

/**
 * The dashboard: its page, the JSON it reads, live updates (server-sent events) and, with `writes`, the
 * admin's writes. It reads through a ThrottleAdmin of its own, samples the throttles' statistics once a
 * second (the charts' history, kept in Redis beside the namespace's throttles, so that it outlives a restart)
 * and never scans buckets. It has no authentication of its own:
 * mount it behind the app's.
 */
export function createDashboardHandler(options: DashboardOptions): DashboardHandler {
  const checked = checkedOptions(options);
  const connection = openClient(options.connection, { maxRetriesPerRequest: null });
  const admin = new ThrottleAdmin({
    connection: connection.client, prefix: options.prefix, throttlePrefix: options.throttlePrefix,
    ...(options.grantor ? { grantor: options.grantor } : {}),
  });
  const history = new DeliveryHistory(checked.historySamples, checked.sampleEveryMs);
  // The history is the namespace's: with a grantor, on the Redis that counts the throttles.
  const namespaceConnection = options.grantor ? openClient(options.grantor.connection, { maxRetriesPerRequest: null }) : undefined;
  const store = new HistoryStore((namespaceConnection ?? connection).client, admin.keys.dashboardHistory, checked.historySamples, checked.historySamples * checked.sampleEveryMs);
  const streams = new EventStreams();
  const listedQueues = [...(options.queues ?? [])];
  const sampler = new OverviewSampler({ read: ({ queues }) => readOverview(admin, listedQueues, { queues }), history, store, streams, everyMs: checked.sampleEveryMs, writes: checked.writes });
  const context = { admin, client: connection.client, sampler, history, streams, writes: checked.writes, sampleEveryMs: checked.sampleEveryMs, historySamples: checked.historySamples };
  sampler.start();
  let closing: Promise<void> | undefined;

  const handler = ((req, res, next) => {
    const where = dashboardPath(req, checked.basePath);
    const notOurs = () => {
      if (next) next();
      else sendError(res, new DashboardRequestError(404, `not found: ${req.url ?? ''} is no path of the dashboard.`));
    };
    if (!where) return notOurs();
    route(context, req, res, where).then((handled) => { if (!handled) notOurs(); }, (error: unknown) => sendError(res, error));
  }) as DashboardHandler;
  handler.close = () => {
    closing ??= (async () => {
      const lastWrite = sampler.stop();
      streams.close();
      await lastWrite;
      await admin.close();
      await closeClient(connection);
      if (namespaceConnection) await closeClient(namespaceConnection);
    })();
    return closing;
  };
  return handler;
}

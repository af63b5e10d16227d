import type { IncomingMessage } from 'node:http';

/** What Express adds to a request it routes through `app.use(path, handler)`. */
export interface MountedRequest extends IncomingMessage {
  /** The path the handler is mounted at ('/throttles'); Express strips it from `url`. */
  baseUrl?: string;
  /** The URL as the client sent it. */
  originalUrl?: string;
}

export interface DashboardPath {
  /** Where the dashboard is, as the browser sees it ('' at the root, '/throttles' mounted there). */
  base: string;
  /** The path under it ('/', '/api/overview'; '' for the base itself, without its slash). */
  path: string;
  query: URLSearchParams;
}

/**
 * Where a request falls in the dashboard, whether it is mounted by Express (`app.use('/throttles', handler)`:
 * `baseUrl` says where), given its path (`basePath`, as behind Fastify's `reply.raw`, which sees the whole
 * URL), or served at the root by node:http. null: not a path of the dashboard.
 */
export function dashboardPath(req: MountedRequest, basePath: string | undefined): DashboardPath | null {
  const url = new URL(req.originalUrl ?? req.url ?? '/', 'http://dashboard.invalid');
  const base = basePath ?? (req.baseUrl ?? '').replace(/\/+$/, '');
  const full = url.pathname;
  if (!full.startsWith(base)) return null;
  const path = full.slice(base.length);
  if (path !== '' && !path.startsWith('/')) return null;
  return { base, path, query: url.searchParams };
}

/** A base path as the option takes it: '' or '/throttles' (no trailing slash). */
export function normalBasePath(basePath: string): string {
  return basePath.replace(/\/+$/, '');
}

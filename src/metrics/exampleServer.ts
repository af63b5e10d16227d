import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { clusterSeedsOf } from '../redis/clusterSeeds';
import { ConnectionInput } from '../redis/connection';
import { MetricsRegistry, registerThrottleMetrics } from './registerThrottleMetrics';

export interface MetricsServer {
  /** The port listened on (the one asked for, or the one the system chose for port 0). */
  port: number;
  /** http://host:port/metrics */
  url: string;
  close(): Promise<void>;
}

/** A minimal node:http server answering `GET /metrics` with `registry.metrics()`; anything else is a 404. */
export async function serveMetrics(registry: MetricsRegistry, options: { port?: number; host?: string } = {}): Promise<MetricsServer> {
  const host = options.host ?? '127.0.0.1';
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (body) => {
        response.writeHead(200, { 'content-type': registry.contentType });
        response.end(request.method === 'HEAD' ? undefined : body);
      },
      (error: Error) => {
        response.writeHead(500, { 'content-type': 'text/plain' }).end(`${error.message}\n`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 9464, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`,
    close: () => new Promise<void>((resolve, reject) => {
      server.closeAllConnections?.();
      server.close((error) => (error ? reject(error) : resolve()));
    }),
  };
}

/** One URL, or several: a Cluster's seeds (their password and TLS taken from the first). */
export function connectionFromEnv(value: string): ConnectionInput {
  const urls = value.split(',').map((url) => url.trim()).filter(Boolean);
  if (urls.length <= 1) return urls[0] ?? value;
  const { startupNodes, redisOptions } = clusterSeedsOf(urls);
  return { startupNodes, clusterOptions: { redisOptions } };
}

/**
 * `tsx src/metrics/exampleServer.ts` (not published; run it from a checkout): serves the throttle metrics of
 * REDIS_URL (default redis://127.0.0.1:6379; several comma-separated URLs: the seed nodes of a Redis Cluster)
 * under PREFIX (default 'bull') and THROTTLE_PREFIX (default PREFIX) on PORT (default 9464), for the
 * queues in QUEUES (comma-separated; default every queue with a live ThrottledWorker).
 */
async function main(): Promise<void> {
  const { Registry: PromRegistry } = await import('prom-client');
  const registry = new PromRegistry();
  const metrics = registerThrottleMetrics(registry, {
    connection: connectionFromEnv(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'),
    prefix: process.env.PREFIX,
    throttlePrefix: process.env.THROTTLE_PREFIX,
    queues: process.env.QUEUES ? process.env.QUEUES.split(',').map((q) => q.trim()).filter(Boolean) : undefined,
  });
  const server = await serveMetrics(registry, { port: Number(process.env.PORT ?? 9464), host: process.env.HOST ?? '0.0.0.0' });
  process.stdout.write(`throttle metrics on ${server.url}\n`);
  const stop = () => {
    void server.close().then(() => metrics.close()).then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (require.main === module) {
  main().catch((error: Error) => {
    process.stderr.write(`${error.stack ?? error.message}\n`);
    process.exit(1);
  });
}

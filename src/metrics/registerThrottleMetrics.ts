import type { Counter, Gauge, OpenMetricsContentType, PrometheusContentType, Registry } from 'prom-client';
import { ThrottleAdmin } from '../admin/ThrottleAdmin';
import { closeClient, ConnectionInput, openClient, OwnedClient } from '../redis/connection';
import { COLLECT_SUCCESS_METRIC, HistogramDefinition, HOLD_TIME_HISTOGRAM, METRIC_DEFINITIONS, MetricDefinition } from './metricDefinitions';
import { readSnapshot, SnapshotSource } from './snapshot';

/**
 * The options of registerThrottleMetrics: where to read the throttles, and which queues to report.
 * @example
 * ```ts
 * registerThrottleMetrics(registry, { connection: 'redis://127.0.0.1:6379', queues: ['orders'] });
 * ```
 */
export interface ThrottleMetricsOptions {
  /**
   * ioredis options, a redis:// URL, a Cluster's seeds (`{ startupNodes }`), an ioredis Redis or Cluster
   * client (never closed by the metrics), or a ThrottleAdmin (never closed either; its prefixes apply).
   */
  connection: ConnectionInput | ThrottleAdmin;
  /**
   * Key prefix, as bullmq's `prefix`. With a ThrottleAdmin as `connection`, it must be the admin's, or be left out.
   * @default 'bull' (a ThrottleAdmin's own prefix when `connection` is one)
   */
  prefix?: string;
  /**
   * The throttle namespace, as the workers' `throttlePrefix`. With a ThrottleAdmin as `connection`, it must be
   * the admin's, or be left out.
   * @default the prefix (a ThrottleAdmin's own namespace when `connection` is one)
   */
  throttlePrefix?: string;
  /**
   * The workers' `grantor`, when they keep their throttles on another Redis (see ThrottleAdmin's option).
   * Ignored when `connection` is a ThrottleAdmin: the admin's own grantor option applies.
   * @default none: the throttles are read on `connection`
   */
  grantor?: {
    /**
     * The Redis that counts the throttles: ioredis options, a redis:// URL, a Cluster's seeds
     * (`{ startupNodes }`), or an ioredis client (never closed by the metrics).
     */
    connection: ConnectionInput;
  };
  /**
   * Report only these queues and the throttles declared on them. A listed queue is reported while it has
   * jobs, even with no live ThrottledWorker; by default, the queues with a live ThrottledWorker.
   * @default every queue with a live ThrottledWorker
   */
  queues?: string[];
  /**
   * A scrape that cannot read Redis within this time (ms) reports no throttle figures, and
   * `bullmq_throttle_metrics_collect_success` 0.
   * @default 5000
   */
  timeoutMs?: number;
}

/** What registerThrottleMetrics returns: a handle to take the metrics off the registry again. */
export interface ThrottleMetrics {
  /** Removes the metrics from the registry and closes the connection they opened (not one passed in). */
  close(): Promise<void>;
}

type PromClient = typeof import('prom-client');

/**
 * A prom-client Registry of either exposition format. It is named by the members the metrics use rather
 * than imported from prom-client, so that these declarations compile where prom-client (an optional peer
 * dependency) is not installed.
 */
export interface MetricsRegistry {
  /** The Content-Type of what `metrics()` returns (Prometheus text or OpenMetrics), as prom-client has it. */
  readonly contentType: string;
  /** Collects every metric of the registry and resolves to the exposition text, as prom-client does. */
  metrics(): Promise<string>;
  /** prom-client's metrics register themselves; the parameter is theirs (a prom-client Metric). */
  registerMetric(metric: never): void;
  /**
   * The metric registered under `name`, or undefined, as prom-client has it: close() uses it to remove only
   * the metrics it registered.
   * @param name A metric's name, such as `bullmq_throttle_waiting_jobs`.
   */
  getSingleMetric(name: string): unknown;
  /**
   * Removes the metric registered under `name`, as prom-client does.
   * @param name A metric's name.
   */
  removeSingleMetric(name: string): void;
}

/** The registry as prom-client types it (the package compiles against prom-client; its users need not). */
function promRegistry(registry: MetricsRegistry): Registry<PrometheusContentType> | Registry<OpenMetricsContentType> {
  return registry as unknown as Registry<PrometheusContentType> | Registry<OpenMetricsContentType>;
}

/** prom-client is an optional peer dependency: loaded only when metrics are asked for. */
function loadPromClient(): PromClient {
  try {
    return require('prom-client') as PromClient;
  } catch (error) {
    throw new Error(`registerThrottleMetrics needs prom-client (>=15), an optional peer dependency: npm install prom-client (${(error as Error).message})`);
  }
}

/**
 * Registers the throttle metrics on `registry`. Each scrape reads them afresh through ThrottleAdmin (one
 * read shared by every metric of the scrape); series of throttles and queues no longer live disappear.
 * A scrape that cannot read Redis (down, or slower than `timeoutMs`) does not fail and logs nothing: it
 * reports no throttle series, and `bullmq_throttle_metrics_collect_success` 0.
 */
export function registerThrottleMetrics(registry: MetricsRegistry, options: ThrottleMetricsOptions): ThrottleMetrics {
  const timeoutMs = options.timeoutMs ?? 5000;
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new TypeError(`registerThrottleMetrics: timeoutMs ${String(options.timeoutMs)} must be a positive number of milliseconds.`);
  }
  if (options.queues !== undefined && !(Array.isArray(options.queues) && options.queues.every((q) => typeof q === 'string' && q.length > 0))) {
    throw new TypeError('registerThrottleMetrics: queues must be an array of queue names.');
  }
  const given = options.connection instanceof ThrottleAdmin ? options.connection : undefined;
  if (given && options.prefix !== undefined && options.prefix !== given.keys.prefix) {
    throw new TypeError(`registerThrottleMetrics: prefix '${options.prefix}' differs from the ThrottleAdmin's '${given.keys.prefix}': give one or the other.`);
  }
  if (given && options.throttlePrefix !== undefined && options.throttlePrefix !== given.keys.namespace) {
    throw new TypeError(`registerThrottleMetrics: throttlePrefix '${options.throttlePrefix}' differs from the ThrottleAdmin's '${given.keys.namespace}': give one or the other.`);
  }
  const prom = loadPromClient();
  const queues = options.queues ? [...options.queues] : undefined;

  let admin: ThrottleAdmin | undefined = given;
  let owned: OwnedClient | undefined;
  const source = new SnapshotSource(() => readSnapshot(admin!, queues), timeoutMs);

  const registered: { name: string; metric: unknown }[] = [];
  try {
    for (const definition of METRIC_DEFINITIONS) {
      registered.push({ name: definition.name, metric: register(prom, registry, definition, source) });
    }
    registered.push({ name: HOLD_TIME_HISTOGRAM.name, metric: registerHistogram(registry, HOLD_TIME_HISTOGRAM, source) });
    const success = new prom.Gauge({
      name: COLLECT_SUCCESS_METRIC,
      help: '1 when the last scrape read the throttle figures from Redis; 0 when it failed or timed out (the throttle series were then left out).',
      registers: [promRegistry(registry)],
      async collect(this: Gauge) {
        this.set((await source.current()) ? 1 : 0);
      },
    });
    registered.push({ name: COLLECT_SUCCESS_METRIC, metric: success });
  } catch (error) {
    // A name already registered (metrics registered twice on one registry): leave the registry as it was.
    for (const { name } of registered) registry.removeSingleMetric(name);
    throw error;
  }

  if (!admin) {
    // Our own client, so that a Redis outage is an 'error' event we absorb rather than ioredis logging it.
    owned = openClient(options.connection as ConnectionInput, { maxRetriesPerRequest: null });
    if (owned.owned) owned.client.on('error', () => undefined);
    admin = new ThrottleAdmin({ connection: owned.client, prefix: options.prefix, throttlePrefix: options.throttlePrefix, grantor: options.grantor });
  }

  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        source.close();
        for (const { name, metric } of registered) {
          if (registry.getSingleMetric(name) === metric) registry.removeSingleMetric(name);
        }
        if (owned) {
          // Our admin (its bullmq Queue handles); its client is closed below only when we opened it.
          await admin!.close().catch(() => undefined);
          // quit() would wait for a Redis that does not answer; a connection that is not ready is just dropped.
          if (!owned.owned) return;
          if (owned.client.status === 'ready') await closeClient(owned).catch(() => undefined);
          else if (owned.client.status !== 'end') owned.client.disconnect();
        }
      })();
      return closing;
    },
  };
}

function register(prom: PromClient, registry: MetricsRegistry, definition: MetricDefinition, source: SnapshotSource): Counter<string> | Gauge<string> {
  const config = { name: definition.name, help: definition.help, labelNames: definition.labelNames, registers: [promRegistry(registry)] };
  if (definition.type === 'counter') {
    return new prom.Counter({
      ...config,
      async collect(this: Counter<string>) {
        const snapshot = await source.current();
        this.reset();
        if (snapshot) for (const sample of definition.samples(snapshot)) this.inc(sample.labels as Record<string, string>, sample.value);
      },
    });
  }
  return new prom.Gauge({
    ...config,
    async collect(this: Gauge<string>) {
      const snapshot = await source.current();
      this.reset();
      if (snapshot) for (const sample of definition.samples(snapshot)) this.set(sample.labels as Record<string, string>, sample.value);
    },
  });
}

/**
 * A histogram whose buckets Redis keeps: prom-client's Histogram only adds observations, so this is a metric of
 * our own that the registry asks for its values at each scrape, as it asks its own (name, help, type, get()).
 */
function registerHistogram(registry: MetricsRegistry, definition: HistogramDefinition, source: SnapshotSource): object {
  const metric = {
    name: definition.name,
    help: definition.help,
    type: 'histogram',
    aggregator: 'sum',
    labelNames: [...definition.labelNames, 'le'],
    reset: () => undefined,
    async get() {
      const snapshot = await source.current();
      const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
      for (const { labels, value } of snapshot ? definition.samples(snapshot) : []) {
        definition.bounds.forEach((bound, i) => values.push({ labels: { ...labels, le: bound }, value: value.cumulative[i], metricName: `${definition.name}_bucket` }));
        values.push({ labels: { ...labels, le: '+Inf' }, value: value.count, metricName: `${definition.name}_bucket` });
        values.push({ labels: { ...labels }, value: value.sumMs / 1000, metricName: `${definition.name}_sum` });
        values.push({ labels: { ...labels }, value: value.count, metricName: `${definition.name}_count` });
      }
      return { name: definition.name, help: definition.help, type: 'histogram', aggregator: 'sum', values };
    },
  };
  registry.registerMetric(metric as never);
  return metric;
}

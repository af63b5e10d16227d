import { UsageError } from './errors';

/** Options every command takes. */
export interface GlobalOptions {
  /** One Redis, or seed nodes of a Redis Cluster (any reachable one will do). */
  redis: string[];
  /** Connect as a Redis Cluster client even to a single seed (found out by itself otherwise). */
  cluster?: boolean;
  prefix: string;
  /** The throttle namespace, as the workers' throttlePrefix; undefined: the prefix. */
  throttlePrefix?: string;
  /** The Redis of the workers' grantor option, when their throttles are counted apart from the queues. */
  grantorRedis?: string;
  json: boolean;
}

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export function defaultRedisUrl(env: NodeJS.ProcessEnv = process.env): string {
  return env.REDIS_URL && env.REDIS_URL.trim() !== '' ? env.REDIS_URL : DEFAULT_REDIS_URL;
}

/** URLs from one --redis value or REDIS_URL: several may be given comma-separated (a Cluster's seeds). */
export function splitRedisUrls(value: string): string[] {
  return value.split(',').map((url) => url.trim()).filter((url) => url.length > 0);
}

/**
 * commander's parser for a repeatable --redis: the first one given replaces the default (REDIS_URL, or
 * the local Redis), each further one adds a seed.
 */
export function redisOptionParser(defaults: readonly string[]): (value: string, previous: string[]) => string[] {
  return (value, previous) => [...(previous === defaults ? [] : previous), ...splitRedisUrls(value)];
}

/** A whole number in [min, max], for an option such as --top or --interval. */
export function parseWholeNumber(option: string, raw: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const text = raw.trim();
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${option} must be a whole number from ${min}${max === Number.MAX_SAFE_INTEGER ? ' up' : ` to ${max}`}, not '${raw}'.`);
  }
  return n;
}

/** The URL as it can be shown: without its password. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return url;
  }
}

export function checkRedisUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--redis '${url}' is not a URL: write redis://host:port (or rediss:// for TLS).`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new UsageError(`--redis '${redactUrl(url)}' must be a redis:// or rediss:// URL.`);
  }
}

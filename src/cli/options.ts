import { UsageError } from './errors';

/** Options every command takes. */
export interface GlobalOptions {
  redis: string;
  prefix: string;
  json: boolean;
}

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export function defaultRedisUrl(env: NodeJS.ProcessEnv = process.env): string {
  return env.REDIS_URL && env.REDIS_URL.trim() !== '' ? env.REDIS_URL : DEFAULT_REDIS_URL;
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

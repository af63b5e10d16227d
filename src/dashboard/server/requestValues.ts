import type { KeyValue } from '../../declarations/Key';
import { InvalidOptionError } from '../../errors/InvalidOptionError';

/** A name the request must give (a throttle, a queue, a job id), from the query string or a JSON body. */
export function requiredName(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidOptionError(`'${field}' must be a non-empty string, not ${JSON.stringify(value) ?? 'undefined'}: give it, as in {"${field}":"stripe"}.`);
  }
  return value;
}

/**
 * Key values naming one bucket: an array of strings, numbers and booleans, or null for the bucket of jobs
 * missing the key (and for an unkeyed throttle's one bucket).
 */
export function keyValues(field: string, value: unknown): KeyValue[] | null {
  if (value === null) return null;
  const scalar = (v: unknown): v is KeyValue => typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
  if (!Array.isArray(value) || !value.every(scalar)) {
    throw new InvalidOptionError(`'${field}' must be an array of key values (strings, numbers, booleans) or null, not ${JSON.stringify(value)}: write ["acme"] for one bucket.`);
  }
  return value;
}

/** `key` from the query string: JSON (`["acme"]`, `null`); absent means null. */
export function keyFromQuery(text: string | null): KeyValue[] | null {
  if (text === null) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InvalidOptionError(`'key' must be JSON, not '${text}': write key=["acme"] (URL-encoded), or leave it out for an unkeyed throttle.`);
  }
  return keyValues('key', value);
}

/** An optional positive number of milliseconds (forMs, ttlMs); ThrottleAdmin checks it further. */
export function optionalMs(field: string, value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number') throw new InvalidOptionError(`'${field}' must be a number of milliseconds, not ${JSON.stringify(value)}: write {"${field}":60000}, or leave it out.`);
  return value;
}

export function objectBody(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidOptionError(`the request body must be a JSON object, not ${JSON.stringify(body)}: send {"throttle":"stripe", ...}.`);
  }
  return body as Record<string, unknown>;
}

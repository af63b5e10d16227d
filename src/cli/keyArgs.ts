import { KeyValue } from '../declarations/Key';
import { UsageError } from './errors';

export const JSON_PREFIX = 'json:';

/**
 * A key value from the command line: a string as written, unless it starts with 'json:', in which case
 * the rest is JSON and must be a number, a boolean or a string (`json:42`, `json:true`, `json:"json:x"`).
 */
export function parseKeyArg(arg: string): KeyValue {
  if (!arg.startsWith(JSON_PREFIX)) return arg;
  const text = arg.slice(JSON_PREFIX.length);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(`key value '${arg}' is not valid JSON after 'json:': write json:42, json:true or json:"text" (or drop 'json:' for a string).`);
  }
  if (typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return value;
  throw new UsageError(`key value '${arg}' must be a JSON number, boolean or string; key values cannot be ${value === null ? 'null' : Array.isArray(value) ? 'arrays' : typeof value === 'object' ? 'objects' : typeof value}.`);
}

export function parseKeyArgs(args: readonly string[]): KeyValue[] | null {
  return args.length === 0 ? null : args.map(parseKeyArg);
}

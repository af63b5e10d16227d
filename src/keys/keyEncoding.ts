import { InvalidGrantError } from '../errors/InvalidGrantError';
import { KeyValue } from '../declarations/Key';

/**
 * Encodes names and key values into Redis key segments that never contain ':', ',', '{' or '}', so that
 * no value can collide with another, break a hash tag or reach into another throttle's keys.
 */
export function encodeSegment(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    // Lone UTF-16 surrogates (legal in JSON strings) make encodeURIComponent throw; '%u' never appears in
    // its output, so spelling them '%uXXXX' keeps the encoding one-to-one.
    let out = '';
    for (const char of text) {
      const code = char.codePointAt(0) ?? 0;
      out += code >= 0xd800 && code <= 0xdfff ? `%u${code.toString(16).toUpperCase().padStart(4, '0')}` : encodeURIComponent(char);
    }
    return out;
  }
}

export function decodeSegment(segment: string): string {
  return segment.split(/(%u[0-9A-F]{4})/).map((piece) =>
    piece.startsWith('%u') ? String.fromCharCode(parseInt(piece.slice(2), 16)) : decodeURIComponent(piece),
  ).join('');
}

/** The bucket of an unkeyed throttle, and the shared bucket of jobs missing a keyed throttle's key. */
export const UNKEYED_BUCKET = '-';
export const MISSING_KEY_BUCKET = '~';

function encodeValue(value: KeyValue, throttle: string): string {
  switch (typeof value) {
    case 'string': return `s${encodeSegment(value)}`;
    case 'boolean': return value ? 't' : 'f';
    case 'number':
      if (!Number.isFinite(value)) {
        throw new InvalidGrantError(`Throttle '${throttle}': key value ${value} is not a finite number; key values are strings, finite numbers or booleans.`);
      }
      return `n${Object.is(value, -0) ? 0 : value}`;
    default:
      throw new InvalidGrantError(
        `Throttle '${throttle}': key value ${JSON.stringify(value)} (${typeof value}) cannot name a bucket; key values are strings, finite numbers or booleans.`,
      );
  }
}

/** One bucket's segment: its key values, typed so that 1, '1' and true name three different buckets. */
export function encodeBucket(values: readonly KeyValue[], throttle: string): string {
  return values.map((value) => encodeValue(value, throttle)).join(',');
}

export type DecodedBucket = { kind: 'unkeyed' } | { kind: 'missing' } | { kind: 'keyed'; values: KeyValue[] };

/** A bucket's key values as the stats report them: [] for an unkeyed throttle's one bucket, null for the missing-key one. */
export function bucketKeyValues(segment: string): KeyValue[] | null {
  const decoded = decodeBucket(segment);
  return decoded.kind === 'keyed' ? decoded.values : decoded.kind === 'unkeyed' ? [] : null;
}

export function decodeBucket(segment: string): DecodedBucket {
  if (segment === UNKEYED_BUCKET) return { kind: 'unkeyed' };
  if (segment === MISSING_KEY_BUCKET) return { kind: 'missing' };
  return {
    kind: 'keyed',
    values: segment.split(',').map((part): KeyValue => {
      switch (part[0]) {
        case 's': return decodeSegment(part.slice(1));
        case 'n': return Number(part.slice(1));
        case 't': return true;
        case 'f': return false;
        default: throw new Error(`Not a bucket segment written by bullmq-throttle: ${segment}`);
      }
    }),
  };
}

import { InvalidGrantError } from '../errors/InvalidGrantError';

/** What a granted token must carry for anyone holding its id to return it: where it was counted, and when. */
export interface TokenRecord {
  readonly nonce: string;
  readonly grantUs: number;
  readonly leaseMs: number;
  /** Per throttle: its name, the bucket segment, the windows the token was counted in, and its count (cost) when above 1. */
  readonly throttles: readonly { name: string; bucket: string; windows: number[]; count?: number }[];
}

const VERSION = 1;

export function encodeTokenId(record: TokenRecord): string {
  const payload = [VERSION, record.nonce, record.grantUs, record.leaseMs, record.throttles.map((t) => (t.count ? [t.name, t.bucket, t.windows, t.count] : [t.name, t.bucket, t.windows]))];
  return Buffer.from(JSON.stringify(payload)).toString('base64url');
}

export function decodeTokenId(id: string): TokenRecord {
  try {
    const [version, nonce, grantUs, leaseMs, throttles] = JSON.parse(Buffer.from(id, 'base64url').toString('utf8'));
    if (version !== VERSION || typeof nonce !== 'string' || !Number.isSafeInteger(grantUs) || !Number.isSafeInteger(leaseMs) || !Array.isArray(throttles)) {
      throw new Error('unexpected shape');
    }
    return {
      nonce, grantUs, leaseMs,
      throttles: throttles.map(([name, bucket, windows, count]: [unknown, unknown, unknown, unknown]) => {
        if (typeof name !== 'string' || typeof bucket !== 'string' || !Array.isArray(windows) || !windows.every(Number.isSafeInteger)) {
          throw new Error('unexpected throttle entry');
        }
        if (count === undefined) return { name, bucket, windows: windows as number[] };
        if (!Number.isSafeInteger(count) || (count as number) < 1) throw new Error('unexpected count');
        return { name, bucket, windows: windows as number[], count: count as number };
      }),
    };
  } catch (error) {
    throw new InvalidGrantError(
      `returnTokens: ${JSON.stringify(id.length > 40 ? `${id.slice(0, 40)}…` : id)} is not a token id from grant() (${(error as Error).message}); pass the \`id\` of a granted result.`,
    );
  }
}

import { encodeSegment } from './keyEncoding';

/**
 * Owns every Redis key name the package writes. All keys of one throttle share the hash tag
 * `{<encoded name>}`, so a throttle's scripts touch one cluster slot. The namespace `<prefix>::throttle`
 * cannot be a BullMQ queue's key, since BullMQ queue names are never empty.
 */
export class ThrottleKeys {
  constructor(readonly prefix: string) {}

  /** Everything of one throttle starts with this. */
  throttleBase(name: string): string {
    return `${this.prefix}::throttle:{${encodeSegment(name)}}`;
  }

  /** HASH: the sliding-window counter of one limit (by its window) of one bucket. */
  windowCounter(name: string, bucket: string, windowMs: number): string {
    return `${this.throttleBase(name)}:b:${bucket}:${windowMs}`;
  }

  /** ZSET: tokens returned recently, so that a second return of one token is a no-op. */
  returnedTokens(name: string): string {
    return `${this.throttleBase(name)}:returned`;
  }
}

import { UnrecoverableError } from 'bullmq';
import { decodeBucket, decodeSegment } from '../keys/keyEncoding';

/**
 * A held job could not go within its throttle's `maxWait` (Throttle.maxWait): its bucket's backlog and limits put
 * its start further away (failed at once), or it waited that long. The job fails without retries (an
 * UnrecoverableError) and its processor does not run; its `failedReason` is this message, which names the
 * throttle, the bucket and the wait.
 */
export class ThrottleWaitTimeoutError extends UnrecoverableError {
  /** The throttle whose maxWait it exceeded. */
  readonly throttle: string;
  /** The bucket it waited on, as its key segment (`throttleBucket` takes the key values). */
  readonly bucket: string;
  /** 'estimate': failed at once, its wait estimated from the backlog and limits; 'waited': it waited that long. */
  readonly kind: 'estimate' | 'waited';
  /** The wait estimated, or waited (ms). */
  readonly waitMs: number;
  /** The throttle's maxWait (ms). */
  readonly maxWaitMs: number;

  /**
   * @param jobId - The job that failed.
   * @param reason - What the delivery script recorded: "<encoded throttle>|<bucket>|<would|waited>|<ms>|<maxWait ms>".
   */
  constructor(jobId: string | undefined, reason: string) {
    const parts = reason.split('|');
    const [encoded, bucket, kind, waitMs, maxWaitMs] = parts.length >= 5
      ? [parts[0], parts.slice(1, -3).join('|'), parts[parts.length - 3], Number(parts[parts.length - 2]), Number(parts[parts.length - 1])]
      : ['', '', 'waited', 0, 0];
    const throttle = safe(() => decodeSegment(String(encoded)), String(encoded));
    const estimate = kind === 'would';
    const where = `throttle '${throttle}' (${describeBucket(String(bucket))})`;
    super(estimate
      ? `job ${jobId ?? '?'} would wait about ${waitMs} ms in ${where} by its backlog and limits, longer than its maxWait of ${maxWaitMs} ms: failed at once`
      : `job ${jobId ?? '?'} waited ${waitMs} ms in ${where}, its maxWait is ${maxWaitMs} ms: failed`);
    this.name = new.target.name;
    this.throttle = throttle;
    this.bucket = String(bucket);
    this.kind = estimate ? 'estimate' : 'waited';
    this.waitMs = Number(waitMs);
    this.maxWaitMs = Number(maxWaitMs);
  }
}

function safe<T>(read: () => T, otherwise: T): T {
  try {
    return read();
  } catch {
    return otherwise;
  }
}

/** 'bucket ["acme"]', 'its one bucket', 'the bucket of jobs missing its key'. */
function describeBucket(segment: string): string {
  const decoded = safe(() => decodeBucket(segment), null);
  if (!decoded) return `bucket ${segment}`;
  if (decoded.kind === 'unkeyed') return 'its one bucket';
  if (decoded.kind === 'missing') return 'the bucket of jobs missing its key';
  return `bucket ${JSON.stringify(decoded.values)}`;
}

/** Positions start..end (inclusive) in one list; end -1: to its last. */
export interface Range {
  readonly start: number;
  readonly end: number;
}

/**
 * Bull Board's "waiting" list under the adapter is bullmq's waiting jobs followed by the held ones: positions
 * start..end of it (end -1 or undefined: to the last) are a range of bullmq's waiting jobs, a range of the held
 * jobs, or both. `waiting` is how many waiting jobs bullmq has.
 */
export function splitWaitingRange(waiting: number, start = 0, end = -1): { waiting: Range | null; held: Range | null } {
  const toLast = end < 0;
  return {
    waiting: start < waiting && (toLast || end >= start) ? { start, end: toLast ? waiting - 1 : Math.min(end, waiting - 1) } : null,
    held: toLast || end >= waiting ? { start: Math.max(start - waiting, 0), end: toLast ? -1 : end - waiting } : null,
  };
}

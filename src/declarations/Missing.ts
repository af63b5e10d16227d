/** What a keyed throttle does with a job that lacks its key. */
export enum Missing {
  /** Every job lacking the key shares one bucket: a producer that forgets the key shows up as one slow bucket. */
  SharedBucket = 'shared-bucket',
  /** Jobs lacking the key are not subject to this throttle. */
  Unthrottled = 'unthrottled',
}

/** SharedBucket is the stricter policy, so it wins when declarations disagree. */
export function strictestMissing(a: Missing, b: Missing): Missing {
  return a === Missing.SharedBucket || b === Missing.SharedBucket ? Missing.SharedBucket : Missing.Unthrottled;
}

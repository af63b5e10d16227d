/**
 * A held job's class, as src/queueState/jobClassifier.ts names it and lua/includes/schedulerKeys.lua parseClass
 * reads it: "<gen>/*" (no bucket) or "<gen>/<bucket id>|<bucket id>...", each bucket id "<encoded throttle>=<bucket
 * segment>" followed by "$<cost>" when the job costs other than 1 there (encoded names and segments hold no '$'); "$0"
 * for a job whose cost cannot be counted (it fails when delivered, src/queueState/jobCost.ts).
 */
export interface ClassBucket {
  /** "<encoded throttle>=<segment>": the bucket's id (waiters, wakeups), without the cost. */
  readonly id: string;
  readonly encodedName: string;
  readonly segment: string;
  readonly cost: number;
}

export function classBuckets(member: string): ClassBucket[] {
  const rest = member.slice(member.indexOf('/') + 1);
  if (rest === '*') return [];
  return rest.split('|').map(classBucketOf);
}

/** One bucket of a class, "<bucket id>" or "<bucket id>$<cost>" (a lease request names its buckets so too). */
export function classBucketOf(part: string): ClassBucket {
  const dollar = part.indexOf('$');
  const id = dollar < 0 ? part : part.slice(0, dollar);
  const eq = id.indexOf('=');
  return { id, encodedName: id.slice(0, eq), segment: id.slice(eq + 1), cost: dollar < 0 ? 1 : Number(part.slice(dollar + 1)) };
}

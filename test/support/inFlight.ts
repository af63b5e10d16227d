/** The most intervals [from, to) open at once: jobs in flight, counted from processedOn to finishedOn. */
export function mostAtOnce(intervals: readonly { from: number; to: number }[]): number {
  // An end at t comes before a start at t: a job delivered as another finished is not in flight beside it.
  const events = intervals.flatMap((i) => [{ at: i.from, d: 1 }, { at: i.to, d: -1 }]).sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0;
  let most = 0;
  for (const event of events) {
    open += event.d;
    most = Math.max(most, open);
  }
  return most;
}

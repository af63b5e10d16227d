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

/** The most cost that falls inside any one window of length `windowMs`: mostInAnyWindow, each event weighing its cost. */
export function mostCostInAnyWindow(events: readonly { at: number; cost: number }[], windowMs: number): number {
  const sorted = [...events].sort((a, b) => a.at - b.at);
  let most = 0;
  let sum = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last++) {
    sum += sorted[last].cost;
    while (sorted[last].at - sorted[first].at >= windowMs) sum -= sorted[first++].cost;
    most = Math.max(most, sum);
  }
  return most;
}

/** The most cost in flight at once over intervals [from, to). */
export function mostCostAtOnce(intervals: readonly { from: number; to: number; cost: number }[]): number {
  const events = intervals.flatMap((i) => [{ at: i.from, d: i.cost }, { at: i.to, d: -i.cost }]).sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0;
  let most = 0;
  for (const event of events) {
    open += event.d;
    most = Math.max(most, open);
  }
  return most;
}

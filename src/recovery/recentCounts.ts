/** Each id's counts are kept in this many slots of its span. */
const SLOTS_PER_SPAN = 64;
/**
 * More slots than this (over every id), and the counts stop: they could no longer vouch for everything counted.
 * A slot costs some 50 bytes: at most about 25 MB, e.g. 8,000 buckets busy in every slot of their window.
 */
const MOST_SLOTS = 500_000;

interface IdCounts {
  readonly spanMs: number;
  readonly slotMs: number;
  /** Slot start (ms, the caller's monotonic clock) -> the counts in it. */
  readonly slots: Map<number, number>;
}

/**
 * Counts of what happened lately, per id, each kept for its span (a throttle's longest window): bounded
 * (64 slots an id, at most 500,000 slots in all; past that, `whole` turns false and nothing more is kept), and
 * reported as (agoUs, count) pairs measured from each slot's end, so that a count reported looks no older than
 * it is. What a worker delivered (src/worker/recovery/deliveryMemory.ts) and what a Grantor granted
 * (src/grant/grantMemory.ts) are kept this way, to be counted again when the node counting them lost them.
 */
export class RecentCounts {
  private readonly ids = new Map<string, IdCounts>();
  private overflowed = false;
  private slotCount = 0;

  /** Whether every count noted is still here (false past the bound). */
  get whole(): boolean {
    return !this.overflowed;
  }

  /** Whether nothing is kept (every count noted left its span at the last sweep, or none was noted). */
  get empty(): boolean {
    return this.ids.size === 0;
  }

  /** Counts `count` for `id` at `now`, kept for `spanMs` (the longest span noted for the id). */
  note(id: string, spanMs: number, count: number, now: number): void {
    if (this.overflowed) return;
    let counts = this.ids.get(id);
    if (!counts || counts.spanMs < spanMs) {
      counts = { spanMs, slotMs: Math.max(1, Math.ceil(spanMs / SLOTS_PER_SPAN)), slots: counts?.slots ?? new Map() };
      this.ids.set(id, counts);
    }
    const start = Math.floor(now / counts.slotMs) * counts.slotMs;
    const before = counts.slots.get(start);
    counts.slots.set(start, (before ?? 0) + count);
    if (before === undefined && ++this.slotCount > MOST_SLOTS) {
      this.overflowed = true;
      this.ids.clear();
    }
  }

  /** Takes back `count` noted for `id` at `notedAt` (it did not happen after all). */
  unnote(id: string, count: number, notedAt: number): void {
    const counts = this.ids.get(id);
    if (!counts) return;
    const start = Math.floor(notedAt / counts.slotMs) * counts.slotMs;
    const left = (counts.slots.get(start) ?? 0) - count;
    if (left > 0) {
      counts.slots.set(start, left);
    } else if (counts.slots.delete(start)) {
      this.slotCount--;
    }
  }

  /** Drops what left every span by `now`. */
  sweep(now: number): void {
    for (const [id, counts] of this.ids) {
      for (const start of counts.slots.keys()) {
        if (start + counts.slotMs < now - counts.spanMs) {
          counts.slots.delete(start);
          this.slotCount--;
        }
      }
      if (counts.slots.size === 0) this.ids.delete(id);
    }
  }

  /** Per id, (agoUs, count) pairs, after a sweep: ago from each slot's end, every count as recent as the latest could be. */
  report(now: number): [string, [number, number][]][] {
    this.sweep(now);
    const reported: [string, [number, number][]][] = [];
    for (const [id, counts] of this.ids) {
      reported.push([id, [...counts.slots].map(([start, count]) => [Math.max(0, Math.floor((now - start - counts.slotMs) * 1000)), count])]);
    }
    return reported;
  }
}

import { encodeSegment } from '../keys/keyEncoding';
import { longestSpanMs } from '../declarations/mergeDeclarations';
import { ThrottleSpec } from '../declarations/ThrottleSpec';
import type { CounterHistory } from '../lua/calls/reportDeliveries';
import { RecentCounts } from '../recovery/recentCounts';

/** One window counter a granted delivery counted in, with the tokens it took there. */
export interface GrantedWindow {
  /** "<encoded throttle>=<bucket segment>", as the counter's key spells them. */
  readonly bucketId: string;
  readonly max: number;
  readonly windowMs: number;
  readonly cost: number;
}

/**
 * What a Grantor granted lately, per window counter, each for its window and h (bounded as RecentCounts is), and
 * which throttles it granted in: so that when the node counting them loses them (a restart from an older
 * state, a failover to a replica that lacked them), the Grantor tells the namespace's gather what to count again
 * (lua/reportDeliveries-1.lua) and the throttles go on within seconds instead of holding for their longest
 * window. Rates are not counted again (they hold until a burst can fill: lua/includes/recoveryHold.lua).
 * Times are this process's monotonic clock: a grant reported looks no older than it is (the safe direction).
 */
export class GrantMemory {
  private readonly counts = new RecentCounts();
  /** Per counter id: the counter as the report names it (N the latest asked with). */
  private readonly counters = new Map<string, { bucketId: string; max: number; windowMs: number }>();
  /** Per encoded throttle name: its longest span (ms) as granted. */
  private readonly throttles = new Map<string, number>();
  private readonly noted = new WeakSet<ThrottleSpec>();
  private declaredText = '';
  private longestMs = 0;

  constructor(private readonly leaseMs: number) {}

  /** A throttle about to be granted in: a gather that never hears from this Grantor holds it for its longest span. */
  noteThrottle(throttle: ThrottleSpec): void {
    // Every grant call names its throttles: the same specs come again and again (they are immutable).
    if (this.noted.has(throttle)) return;
    this.noted.add(throttle);
    const name = encodeSegment(throttle.name);
    const spanMs = longestSpanMs(throttle);
    if ((this.throttles.get(name) ?? -1) >= spanMs) return;
    this.throttles.set(name, spanMs);
    this.declaredText = [...this.throttles].map(([encoded, ms]) => `${encoded}:${ms}`).join(',');
    this.longestMs = Math.max(this.longestMs, spanMs);
  }

  /** "<encoded throttle>:<longest ms>,..." of every throttle noted. */
  get declared(): string {
    return this.declaredText;
  }

  /** How long (ms) a grant made now may count: the longest span noted, and h. */
  get countsForMs(): number {
    return this.longestMs + this.leaseMs;
  }

  /** One granted delivery's window counters. */
  noteGrant(windows: readonly GrantedWindow[], now: number = performance.now()): void {
    for (const { bucketId, max, windowMs, cost } of windows) {
      const id = `${bucketId}:${windowMs}`;
      this.counters.set(id, { bucketId, max, windowMs });
      this.counts.note(id, windowMs + this.leaseMs, cost, now);
    }
  }

  /** Whether it holds every grant made (false past RecentCounts' bound). */
  get whole(): boolean {
    return this.counts.whole;
  }

  /** What the grants still counting are, per window counter (lua/reportDeliveries-1.lua's counters). */
  report(now: number = performance.now()): CounterHistory {
    const reported: CounterHistory[number][] = [];
    const kept = new Set<string>();
    for (const [id, slots] of this.counts.report(now)) {
      const counter = this.counters.get(id);
      if (!counter) continue;
      kept.add(id);
      reported.push({ ...counter, slots });
    }
    // Counters whose grants all left their windows are named no more.
    for (const id of this.counters.keys()) if (!kept.has(id)) this.counters.delete(id);
    return reported;
  }
}

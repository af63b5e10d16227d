import { classBuckets } from '../../keys/classMember';
import { wantsRefill } from '../../lua/calls/takeLeasedJobs';
import { LeaseRequest } from './grantorCalls';

/** A class's buckets as its name spells them, each id with its cost there ("<id>$<cost>" unless 1; src/keys/classMember.ts). */
export function bucketPartsOf(member: string): string[] {
  return classBuckets(member).map((b) => (b.cost === 1 ? b.id : `${b.id}$${b.cost}`));
}

/** How many lease round trips the tokens leased ahead should last at the rate the worker delivers. */
const ROUND_TRIPS_AHEAD = 3;
/** ...but never more than this share of h: tokens leased ahead must be spent before they expire. */
const MOST_OF_LEASE = 0.5;
/**
 * A class the grantor had no room for is not asked for again for at most this long. Past it, the queue's own
 * word decides (lease-room, shared by the queue's workers: the answer's deposit takes the class out of the
 * classes waiting until the grantor said, lua/takeLeasedJobs-19.lua), so that a wake naming it again sooner
 * (tokens returned, units freed) is asked for, by whichever worker of the queue sees it: this bridges only the
 * answer's way into the queue.
 */
const RETRY_BRIDGE_MS = 1_000;
/** Delivery rate and round trip are smoothed over samples at least this long apart. */
const SAMPLE_MS = 50;
const SMOOTHING = 0.3;

/**
 * How many tokens a worker leases, and for which classes. A token leased and not spent within h is
 * wasted for a whole W + h (the grantor counted it), so a worker leases for the slots asking now, first
 * classes first in queue order, plus `ahead` more so that the next slots to ask need not wait on the grantor.
 * A pool that runs dry costs more than the wait: the jobs behind it are filed into their class and delivered
 * from there later, several Redis commands a job. So `ahead` covers what the worker delivers in
 * ROUND_TRIPS_AHEAD lease round trips (measured, both smoothed), capped at MOST_OF_LEASE of h so that it is
 * spent in time, and a pool is refilled once a call leaves it with less than what is spent while one round
 * is in flight (refillBelow). A floor under that starts at a quarter of the worker's slots, doubles after a
 * round that slots had to wait for and grows by one after any other, up to what MOST_OF_LEASE of h spends.
 * When tokens expire, what is leased ahead halves (and regrows by doubling).
 * A class the grantor had no room for is not asked for again before the grantor said room returns: the queue
 * keeps it out of the classes waiting until then, and this book for the moment that takes (RETRY_BRIDGE_MS).
 */
export class LeaseBook {
  private base: number;
  /** Slots asked in vain when the round now in flight was planned. */
  private dry = false;
  /** 1, or less after tokens expired: the share of the rate-based lead leased. */
  private scale = 1;
  private readonly retryAt = new Map<string, number>();
  private expiredSinceLease = 0;
  private perMs = 0;
  private roundTripMs = 0;
  private sample = { atMs: 0, delivered: 0 };

  constructor(private readonly concurrency: () => number, private readonly leaseMs: number) {
    this.base = Math.ceil(concurrency() / 4);
  }

  /** Tokens leased beyond the slots asking now. */
  ahead(): number {
    const leadMs = Math.min(ROUND_TRIPS_AHEAD * this.roundTripMs, MOST_OF_LEASE * this.leaseMs);
    return Math.max(Math.min(this.base, this.mostAhead()), Math.ceil(this.scale * this.perMs * leadMs));
  }

  /** What the worker spends in MOST_OF_LEASE of h, and at least its slots. */
  private mostAhead(): number {
    return Math.max(this.concurrency(), Math.ceil(this.perMs * MOST_OF_LEASE * this.leaseMs));
  }

  /**
   * Whether, at the rate the worker delivers, a delivery comes within MOST_OF_LEASE of h: tokens leased now for held
   * jobs while every slot is busy would be spent before they expire (else they would use up allowance for nothing).
   */
  deliversWithinLease(): boolean {
    return this.perMs * MOST_OF_LEASE * this.leaseMs >= 1;
  }

  /** A pool left below this after a call asks for a refill (lua/takeLeasedJobs-19.lua). */
  refillBelow(): number {
    return Math.max(1, Math.ceil(this.perMs * this.roundTripMs * 1.5), Math.ceil(this.base / 2));
  }

  /** Jobs a delivery call delivered (the rate that sizes the lead). */
  delivered(count: number, nowMs: number): void {
    this.sample.delivered += count;
    const elapsed = nowMs - this.sample.atMs;
    if (elapsed < SAMPLE_MS) return;
    const rate = this.sample.atMs === 0 ? 0 : this.sample.delivered / elapsed;
    // An idle stretch of seconds is one sample, not a reason to keep a stale rate.
    this.perMs = elapsed > 20 * SAMPLE_MS ? rate : this.perMs + SMOOTHING * (rate - this.perMs);
    this.sample = { atMs: nowMs, delivered: 0 };
  }

  /**
   * What to ask the grantor for, given the classes waiting (in queue order, with their held jobs) and the
   * buckets to refill ahead (held REFILL_AHEAD), and the slots asking now: `asking + ahead` tokens, first for held jobs,
   * class by class; what is left refills buckets that flow (each such refill is what the slots asking wait for).
   */
  plan(wanted: readonly { member: string; held: number }[], asking: number, nowMs: number): LeaseRequest[] {
    this.dry = asking > 0;
    let left = asking + this.ahead();
    const requests: LeaseRequest[] = [];
    const ask = (member: string, count: number, refill: boolean) => {
      const retryAt = this.retryAt.get(member);
      if (retryAt !== undefined && retryAt > nowMs) return;
      const buckets = bucketPartsOf(member);
      if (buckets.length === 0 || count <= 0) return;
      requests.push({ member, buckets, count, refill });
      left -= count;
    };
    for (const { member, held } of wanted) if (held > 0 && left > 0) ask(member, Math.min(held, left), false);
    for (const w of wanted) if (wantsRefill(w) && left > 0) ask(w.member, left, true);
    return requests;
  }

  /**
   * The grantor's answer, `roundTripMs` after the request left (deposit included): classes it had no room
   * for wait until it said; the lead adapts to what expired.
   */
  answered(requests: readonly LeaseRequest[], results: readonly { granted: number; roomInMs: number }[], nowMs: number, roundTripMs: number): void {
    requests.forEach((request, i) => {
      const { granted, roomInMs } = results[i];
      if (granted < request.count && roomInMs > 0) this.retryAt.set(request.member, nowMs + Math.min(roomInMs, RETRY_BRIDGE_MS));
      else this.retryAt.delete(request.member);
    });
    this.roundTripMs = this.roundTripMs === 0 ? roundTripMs : this.roundTripMs + SMOOTHING * (roundTripMs - this.roundTripMs);
    if (this.expiredSinceLease > 0) {
      this.base = Math.max(1, Math.floor(this.base / 2));
      this.scale /= 2;
    } else {
      // Slots waited for this round: the lead was short (a round trip slower than measured, a burst).
      this.base = Math.min(this.mostAhead(), this.dry ? 2 * this.base : this.base + 1);
      this.scale = Math.min(1, this.scale * 2);
    }
    this.expiredSinceLease = 0;
    // Classes long gone leave the map: it holds at most the classes asked for lately.
    if (this.retryAt.size > 10_000) for (const [member, at] of this.retryAt) if (at <= nowMs) this.retryAt.delete(member);
  }

  /** Units of these buckets' concurrency came free in this worker: classes waiting on them ask again at once. */
  roomReturned(bucketIds: readonly string[]): void {
    for (const member of this.retryAt.keys()) {
      if (classBuckets(member).some((b) => bucketIds.includes(b.id))) this.retryAt.delete(member);
    }
  }

  expired(count: number): void {
    this.expiredSinceLease += count;
  }
}

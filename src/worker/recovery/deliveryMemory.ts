import { longestSpanMs } from '../../declarations/mergeDeclarations';
import { bucketsOfTicket, deadlineOf } from '../../delivery/lateStartTickets';
import { ThrottleSpec } from '../../declarations/ThrottleSpec';
import { encodeSegment } from '../../keys/keyEncoding';
import type { RegistryEntry } from '../../queueState/registryEntry';
import { RecentCounts } from '../../recovery/recentCounts';

/** Slots are swept of what left every window after this many deliveries. */
const SWEEP_EVERY = 10_000;

/** Tickets kept parsed (cleared when full). */
const PARSED_TICKETS = 4_096;

interface TicketWindows { readonly bucketId: string; readonly longestMs: number; readonly cost: number; readonly leaseMs?: number }

/** What a worker tells a workers' gather (lua/reportDeliveries-1.lua). */
export interface DeliveryReport {
  /** "<encoded throttle>:<longest ms>,..." for its own declarations. */
  readonly declared: string;
  /** Exact workers and leased queues it saw alive within their throttles' longest window, with the same list for each. */
  readonly peers: readonly (readonly [string, string])[];
  /** Per bucket id: (agoUs, count) pairs. */
  readonly buckets: readonly (readonly [string, readonly (readonly [number, number])[]])[];
  /** The longest lease (ms) any of them was counted with: the recount holds them at least that long. */
  readonly leaseMs: number;
}

/** "<encoded throttle>:<longest ms>,..." for declarations: what holds if their worker never tells (includes/grantorRecovery). */
export function declaredLongest(declarations: readonly ThrottleSpec[]): string {
  return declarations.map((d) => `${encodeSegment(d.name)}:${longestSpanMs(d)}`).join(',');
}

/**
 * What this worker delivered through the namespace's node lately, per bucket, for each throttle's longest
 * window (bounded: 64 slots a bucket, at most 500,000 slots in all), and which workers it saw alive: so that when
 * the node comes back without them (a restart from an older state, a failover to a replica that lacked them),
 * the workers tell what was forgotten and the throttles go on within seconds instead of holding for their
 * longest window (lua/reportDeliveries-1.lua). Deliveries are known from the delivery calls' tickets, which
 * only a worker with a start deadline receives: without one (leaseMs 0), or past the bound, it cannot vouch.
 * Times are this process's monotonic clock: a delivery reported looks no older than it is (the safe direction).
 */
export class DeliveryMemory {
  /** Per bucket id, the deliveries' cost, for its longest window. */
  private readonly buckets = new RecentCounts();
  /**
   * Who it saw alive, by who tells a gather for them: an exact worker by its id, a leased queue by prefix:queue
   * (its records tell, whichever of its workers reports). A gather waits for each (seenAlive).
   */
  private readonly seen = new Map<string, { declared: string; longestMs: number; seenAt: number }>();
  private readonly parsedTickets = new Map<string, readonly TicketWindows[]>();
  private sinceSweep = 0;
  /**
   * The longest lease (ms) a remembered delivery was counted with: h, or a bucket's longer lease far from full
   * ("~<L>", lua/includes/exactRoom.lua). Never lowered (at most 250 ms): the node's record of it (hmax) may be
   * lost with the counts (a snapshot saved before it was written), and a recount with a shorter lease would let
   * the next deliveries start before these left every window.
   */
  private longestLeaseMs = 0;

  constructor(private readonly workerId: string) {}

  /** A delivery call's tickets (TakeReply.tickets, exact delivery): each job's buckets, costs and windows; hMs: the call's h. */
  noteDeliveries(tickets: readonly string[], now: number = performance.now(), hMs = 0): void {
    if (!this.buckets.whole) return;
    for (const ticket of tickets) {
      if (!ticket) continue;
      for (const { bucketId, longestMs, cost, leaseMs } of this.parsed(ticket)) {
        this.buckets.note(bucketId, longestMs, cost, now);
        if (!this.buckets.whole) return;
        this.longestLeaseMs = Math.max(this.longestLeaseMs, leaseMs ?? hMs);
      }
    }
    this.sinceSweep += tickets.length;
    if (this.sinceSweep >= SWEEP_EVERY) {
      this.sinceSweep = 0;
      this.buckets.sweep(now);
    }
  }

  /** A started job's tokens now count with this longer lease (lua/countLateStart-n.lua): a recount holds its deliveries as long. */
  noteLongerLease(leaseMs: number): void {
    this.longestLeaseMs = Math.max(this.longestLeaseMs, leaseMs);
  }

  /** The windowed buckets a ticket names; the same tickets come again and again (a bucket's jobs), so they are kept parsed. */
  private parsed(ticket: string): readonly TicketWindows[] {
    const known = this.parsedTickets.get(ticket);
    if (known) return known;
    // A rate's state is not counted again from memory (it holds until a burst can fill: includes/recoveryHold),
    // so only the buckets a window counted; the deadline says nothing of them (their lease does: longestLeaseMs).
    const parts = bucketsOfTicket(deadlineOf(ticket).buckets)
      .filter((b) => b.windows.length > 0)
      .map((b) => ({ bucketId: b.bucketId, longestMs: Math.max(...b.windows), cost: b.cost, ...(b.leaseMs ? { leaseMs: b.leaseMs } : {}) }));
    if (this.parsedTickets.size >= PARSED_TICKETS) this.parsedTickets.clear();
    this.parsedTickets.set(ticket, parts);
    return parts;
  }

  /**
   * The registry's live entries as a heartbeat read them: the exact workers among them are remembered as seen,
   * and the leased queues.
   */
  notePeers(entries: readonly RegistryEntry[], now: number = performance.now()): void {
    for (const entry of entries) {
      if (entry.workerId === this.workerId) continue;
      const longestMs = Math.max(0, ...entry.declarations.map(longestSpanMs));
      const seen = { declared: declaredLongest(entry.declarations), longestMs, seenAt: now };
      this.seen.set(entry.delivery === 'leased' ? `${entry.prefix}:${entry.queue}` : entry.workerId, seen);
    }
    for (const [id, peer] of this.seen) if (now - peer.seenAt > peer.longestMs) this.seen.delete(id);
  }

  /**
   * The exact workers (by id) and leased queues (prefix:queue) it saw alive within their throttles' longest
   * window, with "<encoded throttle>:<longest ms>,..." for each: a namespace rebuilding its counts waits for each
   * to report (lua/reportDeliveries-1.lua, lua/reportQueueHistory-1.lua), whichever kind reports.
   */
  seenAlive(now: number = performance.now()): (readonly [string, string])[] {
    return [...this.seen].filter(([, seen]) => now - seen.seenAt <= seen.longestMs).map(([id, seen]) => [id, seen.declared] as const);
  }

  /** Whether the memory holds every delivery this worker made (false past its bound). */
  get whole(): boolean {
    return this.buckets.whole;
  }

  report(declared: string, now: number = performance.now()): DeliveryReport {
    this.sinceSweep = 0;
    return { declared, peers: this.seenAlive(now), buckets: this.buckets.report(now), leaseMs: this.longestLeaseMs };
  }

  /**
   * A delivery noted at `notedAt` did not start (put back for starting late, its tokens given back): it leaves the
   * memory, or a recovery would count it again and the throttle let fewer through than it allows.
   */
  forget(ticket: string, notedAt: number): void {
    if (!ticket || !this.buckets.whole) return;
    for (const { bucketId, cost } of this.parsed(ticket)) this.buckets.unnote(bucketId, cost, notedAt);
  }
}

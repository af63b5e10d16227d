import { randomBytes } from 'node:crypto';
import { ScriptRunner } from '../../lua/scripts';
import { lateLeasedGrants, lateLeasedReturns, LateDelivery } from '../lateStartTickets';
import { Delivery, DeliveryCall, StopRunners } from '../Delivery';
import { DeliveryContext } from '../ExactDelivery';
import { TakeReply } from '../takeNextJobs';
import { ConcurrencyHolds } from './concurrencyHolds';
import { countLateLeased, GrantorTarget, leaseTokens, LeaseRequest, renewHolds, reportQueueHistory, returnLeasedTokens } from './grantorCalls';
import { LeaseBook } from './leaseBook';
import { Deposit, ReturnGroup, runTakeLeasedJobs, wantsRefill } from '../../lua/calls/takeLeasedJobs';
import { runWithdrawLeases } from '../../lua/calls/withdrawLeases';
import { runWakeBucketIds, WakeKeys } from '../../lua/calls/wakeBuckets';

/** Most waiting classes one delivery call names for leasing. */
const WANTS_LIMIT = 32;

export interface LeasedContext {
  /** The worker's connection (it reaches the queue's slot). */
  queue(): ScriptRunner;
  /** The namespace's grantor: the worker's own connection in a cluster, or the `grantor` option's. */
  grantor(): GrantorTarget;
  call: DeliveryContext;
  /** h: a token expires this long after the reply its request followed (queue node's clock). */
  leaseMs: number;
  durableRedis: boolean;
  /** The queue as the registry names it (prefix:queue). */
  queueId: string;
  /** Encoded names of the throttles the queue declares now. */
  throttles(): string[];
  /** Encoded names of those with a concurrency (their units are held from the grantor: concurrencyHolds.ts). */
  concurrencyThrottles(): string[];
  /** A hold's lifetime: lockDuration + stalledInterval, by when bullmq takes a dead worker's jobs back. */
  holdMs(): number;
  workerId: string;
  /** The queue's workers set and our keys' base (withdrawLeases). */
  workersKey: string;
  queueBase: string;
  concurrency(): number;
  /** Tokens went into the queue's pools: slots waiting for room should look again. */
  onTokens(): void;
  report(what: string, error: unknown): void;
  /** The grantor's node identity the worker saw recorded ('' for none: src/recovery/namespaceIdentity.ts). */
  knownNodeId(): string;
  /** Exact workers and leased queues the worker saw alive lately: a grantor rebuilding its counts waits for their reports too. */
  seenAlive(): readonly (readonly [string, string])[];
  /** The queue's keys a wake of its buckets touches (lua/wakeBuckets-3.lua). */
  wakeKeys(): WakeKeys;
}

/**
 * While every slot is served, held classes are leased for at most this often (and only while slots come free
 * within half of h: LeaseBook.deliversWithinLease): a held job then waits at most about this long past its room
 * behind jobs that need no token, and a queue with many held classes asks the grantor at most this often for them
 * (a round per call cost keyed throughput nearly all of it in an earlier try).
 */
const HELD_LEASE_EVERY_MS = 100;

/**
 * Leased delivery (lua/takeLeasedJobs-19.lua, lua/leaseTokens-1.lua): for a queue whose throttles are
 * counted in another slot, on another node or on another Redis. A delivery call that leaves slots without
 * a job because their class holds no token names the classes waiting; the worker then leases tokens for
 * them from the grantor (granted together per class, counted against W + h), puts them in the queue's pools
 * at once (any worker of the queue may spend them, within h of the request on the queue node's clock) and
 * wakes the slots waiting. One lease request is in flight at a time. A deposit whose call fails is dropped,
 * never sent again nor returned: it may have gone in and been spent.
 */
export class LeasedDelivery implements Delivery {
  readonly mode = 'leased';
  private readonly book: LeaseBook;
  /** A lease request or a renewal of the holds: one call to the grantor at a time (concurrencyHolds.ts). */
  private leasing?: Promise<void>;
  private readonly holds = new ConcurrencyHolds();
  /** The worker's units may be spent until then (performance.now()): its holds lapse no sooner. */
  private usableUntil = 0;
  /** When the last renewal (or first grant) that set every hold's lapse was sent (performance.now()). */
  private renewedAt = 0;
  private renewTimer?: NodeJS.Timeout;
  /** Slots the last call with slots could not serve. */
  private asking = 0;
  /** When held classes were last leased for while every slot was served (performance.now()). */
  private heldLeasedAt = -Infinity;
  private last: { name: string; gen: string } = { name: '', gen: '' };
  /** The queue node's identity the last reply named: a node without the queue's record, after one, lost it. */
  private queueNode = '';

  constructor(private readonly context: LeasedContext) {
    this.book = new LeaseBook(context.concurrency, context.leaseMs);
  }

  async take(call: DeliveryCall, deposits: readonly Deposit[] = [], depositsNode = ''): Promise<TakeReply> {
    this.last = { name: call.name, gen: call.gen };
    const throttles = this.context.concurrencyThrottles();
    // Units go only to calls that can deliver, and only while the holds they come from have not lapsed.
    const lent = throttles.length > 0 && call.tokens.length > 0 && performance.now() < this.usableUntil ? this.holds.lend() : { free: [], freed: [] };
    let result: Awaited<ReturnType<typeof runTakeLeasedJobs>>;
    try {
      result = await runTakeLeasedJobs(this.context.queue(), {
        take: { ...this.context.call(), tokens: call.tokens, workerName: call.name, gen: call.gen },
        wantsLimit: this.leasing ? 0 : WANTS_LIMIT,
        refillBelow: this.book.refillBelow(),
        deposits,
        depositsNode,
        units: { throttles, ...lent },
        knownNode: this.queueNode,
      });
    } catch (error) {
      // (A call that ran and lost its reply delivered jobs this worker never runs: their units count nothing.)
      this.holds.unlend(lent.free);
      throw error;
    }
    const { reply, lease } = result;
    this.queueNode = lease.node;
    this.holds.settle(lent.free, lease.spends, Date.now());
    if (throttles.length > 0) this.keepRenewing();
    this.book.expired(lease.expired);
    this.book.delivered(reply.jobs.length, Date.now());
    if (lease.returns.length > 0) this.giveBack(lease.returns);
    if (call.tokens.length > 0) this.asking = call.tokens.length - reply.jobs.length - reply.refused.size;
    // Slots waiting for tokens, or a flowing class whose pool runs low (leased ahead, so its next jobs need not wait).
    if (lease.wanted.length > 0 && !this.leasing) {
      if (this.asking > 0 || lease.wanted.some(wantsRefill)) {
        this.lease(lease.wanted, reply.nowUs, lease.node);
      } else if (lease.wanted.some((w) => w.held > 0) && performance.now() - this.heldLeasedAt >= HELD_LEASE_EVERY_MS && this.book.deliversWithinLease()) {
        // Every slot served by jobs that need no token (or hold theirs): held jobs, ordered before them, would
        // wait for as long as such jobs keep coming. Their tokens are asked for anyway, once in a while, when a
        // slot comes free often enough to spend them before they expire (slower, they would only be wasted).
        this.heldLeasedAt = performance.now();
        this.lease(lease.wanted, reply.nowUs, lease.node);
      }
    }
    return reply;
  }

  private lease(wanted: readonly { member: string; held: number }[], requestUs: number, node: string): void {
    const requests = this.book.plan(wanted, this.asking, Date.now());
    if (requests.length === 0) return;
    this.leasing = this.leaseAndDeposit(requests, requestUs, node)
      .catch((error) => this.context.report('leasing tokens', error))
      .finally(() => { this.leasing = undefined; });
  }

  private async leaseAndDeposit(requests: readonly LeaseRequest[], requestUs: number, node: string): Promise<void> {
    const asker = {
      queueId: this.context.queueId, leaseMs: this.context.leaseMs, durableRedis: this.context.durableRedis,
      // Free units count at the grantor only while the worker may still spend them.
      holder: this.context.workerId, holdMs: this.context.holdMs(), credit: performance.now() < this.usableUntil ? this.holds.credit() : [],
      knownNodeId: this.context.knownNodeId(),
    };
    const sentMs = Date.now();
    const sentAt = performance.now();
    let answer = await leaseTokens(this.context.grantor(), asker, requests);
    if (answer.status === 'report') {
      // The grantor is rebuilding its counts after a restart or failover: tell it what this queue delivered.
      await this.tellGather();
      answer = await leaseTokens(this.context.grantor(), asker, requests);
    }
    this.book.answered(requests, answer.results, Date.now(), Date.now() - sentMs);
    this.heldMore(answer.results.flatMap((r) => r.held), sentAt);
    const nonce = randomBytes(6).toString('base64url');
    const deposits: Deposit[] = requests.map((request, i) => ({
      member: request.member, requestUs, grantUs: answer.grantUs, nonce: `${nonce}.${i}`,
      count: answer.results[i].granted, roomInMs: answer.results[i].roomInMs, lacking: answer.results[i].lacking, refill: request.refill,
    }));
    // Into the pools now, in a call with no slot of its own (any worker of the queue may spend them).
    await this.take({ tokens: [], name: this.last.name, gen: this.last.gen }, deposits, node);
    if (deposits.some((d) => d.count > 0)) this.context.onTokens();
  }

  /** A grant added units to the worker's holds: they lapse a lifetime after the request was sent, at the soonest. */
  private heldMore(held: readonly (readonly [string, number])[], sentAt: number): void {
    if (held.length === 0) return;
    if (performance.now() >= this.usableUntil) {
      // The first hold, or the first since the others could have lapsed (their free units are gone: the grantor
      // starts a lapsed hold again from nothing): it sets when the units lapse.
      this.holds.lapsed(this.holds.buckets());
      this.renewedAt = sentAt;
      this.usableUntil = sentAt + this.context.holdMs() - HOLD_MARGIN_MS;
    }
    for (const [bucketId, units] of held) this.holds.granted(bucketId, units, Date.now());
  }

  /** A job this worker ran has ended: the units it held are free for the worker's next jobs. */
  jobEnded(jobId: string): Promise<void> {
    const freed = this.holds.jobEnded(jobId, Date.now());
    if (freed.length > 0) {
      // Classes told to wait for these buckets' room may have it now (the grantor could not know): they ask
      // again, and the slots waiting look again.
      this.book.roomReturned(freed);
      this.context.onTokens();
    }
    return Promise.resolve();
  }

  /** Renews the holds while there are any (every quarter of their lifetime, 4 s at most), and gives back idle units. */
  private keepRenewing(): void {
    if (this.renewTimer) return;
    const tickMs = Math.max(50, Math.min(RENEW_TICK_MS, this.context.holdMs() / 8));
    this.renewTimer = setInterval(() => this.renewIfDue(), tickMs);
    this.renewTimer.unref();
  }

  private renewIfDue(): void {
    if (this.leasing) return;
    const holdMs = this.context.holdMs();
    this.holds.releaseIdle(Date.now(), IDLE_UNITS_MS);
    const due = this.holds.heldTotal > 0 && performance.now() - this.renewedAt >= Math.min(holdMs / 4, RENEW_MAX_MS);
    if (!due && !this.holds.changedSinceRenewal) return;
    const holds = this.holds.renewal();
    const sentAt = performance.now();
    this.leasing = renewHolds(this.context.grantor(), this.context.workerId, holdMs, holds)
      .then(({ lapsed }) => {
        this.holds.lapsed(lapsed);
        this.renewedAt = sentAt;
        this.usableUntil = sentAt + holdMs - HOLD_MARGIN_MS;
      })
      .catch((error) => {
        this.holds.unsent(holds);
        this.context.report('renewing concurrency holds', error);
      })
      .finally(() => { this.leasing = undefined; });
  }

  /** The grants a late job's tokens came from take them back: the job never started, so they need not count. */
  /** What the queue delivered lately (its records on the queue's node); the script ignores a second report. */
  async tellGather(): Promise<void> {
    const { queue, grantor, throttles, queueBase, queueId } = this.context;
    await reportQueueHistory(queue(), `${queueBase}:h-index`, queueBase, grantor(), queueId, throttles(), this.context.seenAlive());
  }

  async giveBackLate(late: LateDelivery): Promise<void> {
    const groups = lateLeasedReturns(late);
    if (groups.length > 0) await this.returnAndWake(groups);
  }

  /**
   * The grants its tokens came from count at the grantor as much longer as the start took past their earliest
   * expiry, its deadline (lua/countLateLeased-1.lua).
   */
  async countLateStart(late: LateDelivery, toLeaseMs: number): Promise<number> {
    return countLateLeased(this.context.grantor(), toLeaseMs - late.deadlineMs, lateLeasedGrants(late));
  }

  private giveBack(groups: readonly ReturnGroup[]): void {
    // A lost return only wastes allowance; it never lets more through.
    this.returnAndWake(groups).catch((error) => this.context.report('returning leased tokens', error));
  }

  /**
   * Returned tokens make room that what the grantor said of their buckets (lease-room) did not count on: it
   * answered while it still counted them. Once they are back, the classes waiting on those buckets look again
   * and ask, rather than sleep until then (a limit of 2 per hour waited the hour with one of its tokens
   * expired unspent, or given back by a job put back for starting late).
   */
  private async returnAndWake(groups: readonly ReturnGroup[]): Promise<void> {
    const returned = await returnLeasedTokens(this.context.grantor(), groups);
    if (returned === 0) return;
    const bucketIds = [...new Set(groups.map((g) => g.bucketId))];
    this.book.roomReturned(bucketIds);
    await runWakeBucketIds(this.context.queue(), this.context.wakeKeys(), bucketIds);
  }

  /** The queue's last worker takes the tokens out of its pools, then returns them (lua/withdrawLeases-1.lua). */
  async stop(runners: StopRunners): Promise<void> {
    // A lease stuck on a grantor that does not answer (a failover under way) must not hold up close(): after
    // STOP_WAIT_MS it is left, and what it may still deposit expires unspent (a waste, never an excess).
    await withTimeout(this.leasing, STOP_WAIT_MS);
    if (this.renewTimer) clearInterval(this.renewTimer);
    const dropped = this.holds.dropAll();
    // Every job of this worker has ended by now: its holds go (lapsing by themselves if this is lost).
    if (dropped.length > 0) {
      await withTimeout(renewHolds({ ...this.context.grantor(), runner: runners.grantor }, this.context.workerId, this.context.holdMs(), dropped).catch(() => 0), STOP_WAIT_MS);
    }
    const groups = await runWithdrawLeases(runners.queue, { workers: this.context.workersKey, queueBase: this.context.queueBase, workerId: this.context.workerId });
    // Returns are best effort: taken out of the pools already, tokens not returned only expire.
    await withTimeout(returnLeasedTokens({ ...this.context.grantor(), runner: runners.grantor }, groups).catch(() => 0), STOP_WAIT_MS);
  }
}

/** How long closing waits for a lease in flight, and for the return of the pools' tokens. */
const STOP_WAIT_MS = 2_000;
/** Units of concurrency are spent until this long before their hold could lapse (clocks and delays). */
const HOLD_MARGIN_MS = 1_000;
/** Free units unused this long go back to the grantor (other workers and queues may need them). */
const IDLE_UNITS_MS = 500;
/** How often the holds are looked at: renewed when a quarter of their lifetime has passed, or lowered. */
const RENEW_TICK_MS = 250;
/**
 * Holds are renewed at least this often: a grantor that restarted and lost them holds the throttle until every
 * worker renewed (lua/includes/recoveryHold.lua CONCURRENCY_RENEW_MS, 5 s, must stay above it).
 */
const RENEW_MAX_MS = 4_000;

function withTimeout(work: Promise<unknown> | undefined, ms: number): Promise<void> {
  if (!work) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    work.then(() => resolve(), () => resolve()).finally(() => clearTimeout(timer));
  });
}

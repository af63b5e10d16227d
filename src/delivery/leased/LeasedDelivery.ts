import { randomBytes } from 'node:crypto';
import { ScriptRunner } from '../../lua/scripts';
import { Delivery, DeliveryCall, StopRunners } from '../Delivery';
import { DeliveryContext } from '../ExactDelivery';
import { TakeReply } from '../takeNextJobs';
import { GrantorTarget, leaseTokens, LeaseRequest, reportQueueHistory, returnLeasedTokens } from './grantorCalls';
import { LeaseBook } from './leaseBook';
import { Deposit, returnGroupAt, ReturnGroup, takeLeasedJobs } from './takeLeasedJobs';

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
  workerId: string;
  /** The queue's workers set and our keys' base (withdrawLeases). */
  workersKey: string;
  queueBase: string;
  concurrency(): number;
  /** Tokens went into the queue's pools: slots waiting for room should look again. */
  onTokens(): void;
  report(what: string, error: unknown): void;
}

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
  private leasing?: Promise<void>;
  /** Slots the last call with slots could not serve. */
  private asking = 0;
  private last: { name: string; gen: string } = { name: '', gen: '' };

  constructor(private readonly context: LeasedContext) {
    this.book = new LeaseBook(context.concurrency, context.leaseMs);
  }

  async take(call: DeliveryCall, deposits: readonly Deposit[] = [], depositsNode = ''): Promise<TakeReply> {
    this.last = { name: call.name, gen: call.gen };
    const { reply, lease } = await takeLeasedJobs(
      this.context.queue(),
      { ...this.context.call(), tokens: call.tokens, workerName: call.name, gen: call.gen },
      this.leasing ? 0 : WANTS_LIMIT,
      this.book.refillBelow(),
      deposits,
      depositsNode,
    );
    this.book.expired(lease.expired);
    this.book.delivered(reply.jobs.length, Date.now());
    if (lease.returns.length > 0) this.giveBack(lease.returns);
    if (call.tokens.length > 0) this.asking = call.tokens.length - reply.jobs.length - reply.refused.size;
    // Slots waiting for tokens, or a flowing class whose pool runs low (leased ahead, so its next jobs need not wait).
    if (lease.wanted.length > 0 && !this.leasing && (this.asking > 0 || lease.wanted.some((w) => w.held < 0))) this.lease(lease.wanted, reply.nowUs, lease.node);
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
    const asker = { queueId: this.context.queueId, leaseMs: this.context.leaseMs, durableRedis: this.context.durableRedis };
    const sentMs = Date.now();
    let answer = await leaseTokens(this.context.grantor(), asker, requests);
    if (answer.status === 'report') {
      // The grantor is rebuilding its counts after a restart or failover: tell it what this queue delivered.
      const { queue, grantor, throttles, queueBase, queueId } = this.context;
      await reportQueueHistory(queue(), `${queueBase}:h-index`, queueBase, grantor(), queueId, throttles());
      answer = await leaseTokens(this.context.grantor(), asker, requests);
    }
    this.book.answered(requests, answer.results, Date.now(), Date.now() - sentMs);
    const nonce = randomBytes(6).toString('base64url');
    const deposits: Deposit[] = requests.map((request, i) => ({
      member: request.member, requestUs, grantUs: answer.grantUs, nonce: `${nonce}.${i}`,
      count: answer.results[i].granted, roomInMs: answer.results[i].roomInMs, lacking: answer.results[i].lacking, refill: request.refill,
    }));
    // Into the pools now, in a call with no slot of its own (any worker of the queue may spend them).
    await this.take({ tokens: [], name: this.last.name, gen: this.last.gen }, deposits, node);
    if (deposits.some((d) => d.count > 0)) this.context.onTokens();
  }

  private giveBack(groups: readonly ReturnGroup[]): void {
    // A lost return only wastes allowance; it never lets more through.
    returnLeasedTokens(this.context.grantor(), groups).catch((error) => this.context.report('returning leased tokens', error));
  }

  /** The queue's last worker takes the tokens out of its pools, then returns them (lua/withdrawLeases-1.lua). */
  async stop(runners: StopRunners): Promise<void> {
    // A lease stuck on a grantor that does not answer (a failover under way) must not hold up close(): after
    // STOP_WAIT_MS it is left, and what it may still deposit expires unspent (a waste, never an excess).
    await withTimeout(this.leasing, STOP_WAIT_MS);
    const reply = (await runners.queue.run('withdrawLeases', [this.context.workersKey], [this.context.queueBase, this.context.workerId])) as unknown[];
    const groups: ReturnGroup[] = [];
    for (let i = 0; i < Number(reply[0]); i++) groups.push(returnGroupAt(reply, 1 + 5 * i));
    // Returns are best effort: taken out of the pools already, tokens not returned only expire.
    await withTimeout(returnLeasedTokens({ ...this.context.grantor(), runner: runners.grantor }, groups).catch(() => 0), STOP_WAIT_MS);
  }
}

/** How long closing waits for a lease in flight, and for the return of the pools' tokens. */
const STOP_WAIT_MS = 2_000;

function withTimeout(work: Promise<unknown> | undefined, ms: number): Promise<void> {
  if (!work) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    work.then(() => resolve(), () => resolve()).finally(() => clearTimeout(timer));
  });
}

import { raw2NextJobData } from 'bullmq';
import { nextLookLocalMs, TakeReply } from '../../delivery/takeNextJobs';
import {
  DeliveryRequest, EARLY_WAKE_MS, MAX_BATCH, MAX_CALLS_IN_FLIGHT, MAX_SHORT_WAITS, MIN_OVERLAPPING_BATCH, PARK_MS, SHORT_WAIT_MS, UNASKED_WAIT_MS,
} from './deliveryTuning';
import { GateFailures } from '../gateFailures';
import { MarkerWakeTimer } from './markerWakeTimer';
import { ParkedRequests } from './parkedRequests';
import { PendingRequest, RequestBatcher } from '../../redis/requestBatcher';

/** What serves slot requests once the gate has connected and started (declarations registered). */
export interface SlotServer {
  /** Completions queued for a batch go out before the next delivery call. */
  flushCompletions(): void;
  /** One delivery call for these slots' lock tokens. */
  take(tokens: string[], name: string): Promise<TakeReply>;
  /** What a call's reply says beyond its jobs (stale classes, dropped jobs, a new generation). */
  answered(reply: TakeReply): void;
  classifyBatch(): Promise<number>;
}

/** What serving slot requests needs of the gate. */
export interface SlotRequestsContext {
  /** Resolves once the gate has started (declarations registered); rejects with what its start failed with. */
  readonly started: Promise<SlotServer>;
  closed(): boolean;
  /** False while requests must not wait for room (the worker is paused). */
  mayWait(): boolean;
  concurrency(): number;
  /** The most slots one delivery call serves now (at most MAX_BATCH): fewer while processors start late. */
  maxBatch(): number;
  /** Emits `drained` on the worker (bullmq would not: a pass marked it drained already). */
  emitDrained(): void;
  /** Sets the queue's marker, waking bullmq's blocked main loop. */
  wakeBullmq(): Promise<void>;
  /**
   * True while nothing this process cannot see makes room return sooner than a call said: exact delivery, and
   * no throttle of the queue with a concurrency (a job's end frees its room at once). See SlotRequests.roomReturnsAt.
   */
  roomReturnsOnlyWithTime(): boolean;
  readonly failures: GateFailures;
}

/**
 * The worker's slot requests for a job, as ThrottleGate.moveToActive receives them: gathered into delivery
 * calls (RequestBatcher), parked in this process while room is about to return (ParkedRequests), or handed
 * back to bullmq with the time to look again, bullmq's blocked main loop woken then (MarkerWakeTimer).
 */
export class SlotRequests {
  private readonly batcher = new RequestBatcher<DeliveryRequest, unknown[]>((batch) => this.serve(batch), () => Math.min(MAX_BATCH, this.context.maxBatch()), MAX_CALLS_IN_FLIGHT, MIN_OVERLAPPING_BATCH);
  private readonly parked = new ParkedRequests<DeliveryRequest, unknown[]>((requests) => this.batcher.resubmit(requests));
  private readonly wakeTimer = new MarkerWakeTimer(() => this.context.wakeBullmq());

  constructor(private readonly context: SlotRequestsContext) {}

  /**
   * bullmq's main loop fetches for its free slots one after another, each fetch awaited, and starts the jobs it
   * holds (those it fetched, and each slot's next job after a completion) only once it stops fetching: with a
   * thousand slots refilling as a binding limit's room returned, a delivered job waited 430 ms (median; 980 at
   * the 90th percentile) before its processor was called, each delivery call taking 16 ms, and most went back
   * for starting late. So the main loop's fetch right after one that brought a job is answered here, at once,
   * with none and a time to look again of now (a pass): the loop stops fetching and starts what it holds, and
   * its next fetch, made as a drained worker's is, no longer holds it up (bullmq goes on starting jobs while it
   * runs). bullmq emits `drained` on a pass, which ThrottledWorker drops (`passing`), and marks itself drained,
   * so that it would not emit `drained` when a fetch next finds nothing: then it is emitted here (`drainedOwed`).
   */
  private mainLoopHolds = false;
  /** From a pass until the event loop's next turn: bullmq's `drained` on it says nothing about the queue. */
  passing = false;
  private drainedOwed = false;

  /**
   * When room returns (performance.now() ms), as the last call that left slots waiting said, until a call finds
   * a job again or parked slots are woken (0: not known). A slot's next fetch that comes meanwhile, room due
   * within UNASKED_WAIT_MS, waits with them without a call: the call would find nothing the last one did not
   * see (at a binding limit shared by ten queues, about half the delivery calls brought nothing), and would
   * park with them all the same.
   */
  private roomReturnsAt = 0;

  submit(request: DeliveryRequest): Promise<unknown[]> {
    if (!request.mainLoop) {
      const untilRoomMs = this.roomReturnsAt - performance.now();
      if (request.kind === 'next' && untilRoomMs > 0 && untilRoomMs <= UNASKED_WAIT_MS && this.mayParkNext() && this.context.roomReturnsOnlyWithTime()) {
        return new Promise((resolve, reject) => {
          request.waits++;
          this.parked.park({ request, resolve, reject }, untilRoomMs);
        });
      }
      return this.batcher.submit(request);
    }
    if (this.mainLoopHolds) {
      this.mainLoopHolds = false;
      this.passing = true;
      this.drainedOwed = true;
      setImmediate(() => { this.passing = false; });
      return Promise.resolve(raw2NextJobData([0, 0, 0, Date.now()]));
    }
    // Told as a call would tell it, without the call: bullmq blocks on its marker until room returns (a new job
    // wakes it sooner, and is looked at once room is due, at most UNASKED_WAIT_MS later than a call would have).
    const untilRoomMs = this.roomReturnsAt - performance.now();
    if (untilRoomMs > 0 && untilRoomMs <= UNASKED_WAIT_MS && !this.context.closed() && this.context.mayWait() && this.context.roomReturnsOnlyWithTime()) {
      // As after a call that found nothing.
      this.emitOwedDrained();
      return Promise.resolve(raw2NextJobData([0, 0, 0, this.wakeBullmqAt(Date.now() + untilRoomMs)]));
    }
    return this.batcher.submit(request).then((answer) => {
      if (answer[0]) {
        this.mainLoopHolds = true;
        this.drainedOwed = false;
      } else {
        this.emitOwedDrained();
      }
      return answer;
    });
  }

  /** The main loop found no job: `drained`, owed since a pass, is emitted now. */
  private emitOwedDrained(): void {
    if (!this.drainedOwed) return;
    this.drainedOwed = false;
    this.context.emitDrained();
  }

  /** Slots waiting here look again now (tokens arrived, a job was found). */
  wakeParked(): void {
    this.roomReturnsAt = 0;
    if (this.parked.size > 0) this.parked.wake();
  }

  /**
   * The call's reply names when to look again (it left slots waiting, or every job there is was looked at) with
   * nothing left to look at but what waits for room: the next fetches may wait for it unasked (submit).
   */
  private noteRoomReturn(reply: TakeReply): void {
    if (reply.more || reply.unclassified > 0 || reply.rateLimitMs > 0) return;
    const localNow = Date.now();
    const next = nextLookLocalMs(reply, localNow);
    if (next !== undefined && next > localNow) this.roomReturnsAt = performance.now() + (next - localNow);
  }

  /** A slot's next fetch may wait here: one slot at least is left to bullmq's main loop, which takes jobs of any bucket. */
  private mayParkNext(): boolean {
    return !this.context.closed() && this.context.mayWait()
      && this.parked.count((request) => request.kind === 'next') < Math.max(0, this.context.concurrency() - 1);
  }

  /** Hands every waiting request back to bullmq with no job (the worker pauses). */
  releaseWaiting(): void {
    this.parked.release(raw2NextJobData([0, 0, 0, 0]));
  }

  /** Closing: no more wakes of bullmq, and nothing left waiting here. */
  stop(): void {
    this.wakeTimer.stop();
    this.releaseWaiting();
  }

  private async serve(batch: PendingRequest<DeliveryRequest, unknown[]>[]): Promise<void> {
    let pending = batch;
    let reply: TakeReply | undefined;
    let sentAt = performance.now();
    try {
      const server = await this.context.started;
      for (let round = 0; pending.length > 0 && !this.context.closed(); round++) {
        server.flushCompletions();
        sentAt = performance.now();
        const taken: TakeReply = await server.take(pending.map((p) => p.request.token), pending[0].request.name);
        reply = taken;
        this.context.failures.deliverySucceeded();
        // Slots whose completion Redis refused get nothing: their completion's error is what bullmq sees.
        if (taken.refused.size > 0) {
          pending.filter((_, i) => taken.refused.has(i)).forEach((p) => p.resolve(raw2NextJobData(0 as unknown as unknown[])));
          pending = pending.filter((_, i) => !taken.refused.has(i));
        }
        server.answered(reply);
        const served = pending.slice(0, reply.jobs.length);
        reply.jobs.forEach((job, i) => served[i].resolve(raw2NextJobData([job.fields, job.id, 0, 0])));
        pending = pending.slice(reply.jobs.length);
        // Room was there: what an earlier call said about its return no longer holds.
        if (served.length > 0) this.roomReturnsAt = 0;
        // bullmq's main loop found a job: it woke for a new one, or room came back; waiting slots look too.
        if (this.parked.size > 0 && served.some((p) => p.request.kind === 'fetch')) this.parked.wake();
        // bullmq's own rate limit is full: the rest go back to bullmq, which waits it out as it would.
        if (reply.rateLimitMs > 0) break;
        if (reply.unclassified > 0 && !this.context.closed()) {
          if (pending.length === 0) {
            // Keep classifying while jobs flow, so a new high-priority job is never stuck behind held ones.
            void server.classifyBatch().catch((error) => this.context.failures.report('classifying jobs', error));
          } else if (round < 3 && (await server.classifyBatch()) > 0) {
            continue;
          }
        }
        if (reply.more && pending.length > 0 && round < 3) continue;
        break;
      }
      if (reply) this.noteRoomReturn(reply);
      this.waitOrHandBack(pending, reply);
    } catch (error) {
      // The backoff counts from when the call went out: in a failover ioredis itself spends up to ~1.6 s on a
      // call (its redirections) before it fails, and waiting the backoff again on top of that would resume
      // delivery later than plain bullmq, whose main loop asks again as soon as a fetch fails.
      this.retryLater(pending, Math.max(0, this.context.failures.deliveryFailed(error) - (performance.now() - sentAt)));
    }
  }

  /**
   * Requests whose delivery call failed wait `inMs`, then try again, rather than go back to bullmq: its main
   * loop would emit `error` and ask again at once, thousands of times a second while Redis refuses (OOM).
   */
  private retryLater(pending: PendingRequest<DeliveryRequest, unknown[]>[], inMs: number): void {
    const mayWait = !this.context.closed() && this.context.mayWait();
    for (const p of pending) {
      if (mayWait) this.parked.park(p, inMs);
      else p.resolve(raw2NextJobData([0, 0, 0, 0]));
    }
  }

  /** Requests a call could not serve: each waits for room (see PARK_MS) or goes back to bullmq with no job. */
  private waitOrHandBack(pending: PendingRequest<DeliveryRequest, unknown[]>[], reply: TakeReply | undefined): void {
    if (pending.length === 0) return;
    const localNow = Date.now();
    const next = reply && nextLookLocalMs(reply, localNow);
    const roomInMs = next === undefined ? undefined : next - localNow;
    let parkedNext = this.parked.count((request) => request.kind === 'next');
    const mayParkNext = Math.max(0, this.context.concurrency() - 1);
    const mayWait = !this.context.closed() && this.context.mayWait() && !(reply && reply.rateLimitMs > 0);
    const none: Partial<Record<DeliveryRequest['kind'], unknown[]>> = {};
    for (const p of pending) {
      const request = p.request;
      const short = roomInMs !== undefined && roomInMs <= SHORT_WAIT_MS && request.waits < MAX_SHORT_WAITS;
      const long = request.kind === 'next' && roomInMs !== undefined && roomInMs <= PARK_MS && parkedNext < mayParkNext;
      if (mayWait && (short || long)) {
        if (request.kind === 'next') parkedNext++;
        request.waits++;
        this.parked.park(p, roomInMs!);
      } else {
        p.resolve(none[request.kind] ??= this.noJob(request.kind, reply));
      }
    }
  }

  /**
   * What bullmq itself answers when there is no job: a main-loop fetch gets [null, 0, rateLimitDelay,
   * delayUntil] (moveToActive's reply); a next fetch after a completion or failure gets the same when bullmq's
   * limiter is full or there is a time to look again (a delayed job, or here a full bucket's room), and []
   * when there is nothing to wait for (moveToFinished's reply).
   */
  private noJob(kind: DeliveryRequest['kind'], reply: TakeReply | undefined): unknown[] {
    if (reply && reply.rateLimitMs > 0) return raw2NextJobData([0, 0, reply.rateLimitMs, 0]);
    const delayUntil = reply && !this.context.closed() ? this.localDelayUntil(reply) : 0;
    if (kind === 'next' && delayUntil === 0) return raw2NextJobData(0 as unknown as unknown[]);
    return raw2NextJobData([0, 0, 0, delayUntil]);
  }

  /** When the worker should look again, on its own clock: the next bucket with room or delayed job. */
  private localDelayUntil(reply: TakeReply): number {
    const localNow = Date.now();
    const next = nextLookLocalMs(reply, localNow);
    if (next === undefined) return 0;
    return this.wakeBullmqAt(next);
  }

  /** bullmq's main loop, told to look again at `localMs` (this clock), is woken by its marker then; what to tell it. */
  private wakeBullmqAt(localMs: number): number {
    // Never in the past (bullmq would not block at all) nor 0 (it would sleep for drainDelay).
    const local = Math.max(Math.ceil(localMs), Date.now() + 1);
    this.wakeTimer.wakeAt(local - EARLY_WAKE_MS);
    return local;
  }
}

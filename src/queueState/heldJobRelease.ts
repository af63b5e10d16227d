import { QueueKeys } from 'bullmq';
import type { Logger } from 'pino';
import { ThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { ReleaseHeldStatus, runReleaseHeld } from '../lua/calls/releaseHeld';
import { forgetRemovedJobs } from './forgetRemovedJobs';

/**
 * Most jobs one releaseHeld call moves: about 5 commands each, so a call stays within a few ms and a
 * backlog of any size goes back in many short scripts rather than one that blocks Redis.
 */
export const RELEASE_BATCH = 1_000;

/** Heartbeats on which a lapsed queue's release may be refused before it is left to the queue's next worker. */
const REFUSED_TRIES = 5;

export interface ReleaseOutcome {
  /** Jobs put back into bullmq's wait / prioritized (or paused, on bullmq 5). */
  released: number;
  /** False when a live worker declares throttles on the queue: what was not released yet stays held for it. */
  complete: boolean;
}

export interface ReleaseBatch {
  /** 'done': nothing held any more; 'more': call again; 'declared': a live worker declares the queue, nothing moved. */
  status: 'done' | 'more' | 'declared';
  released: number;
  /** Jobs still held or in intake. */
  left: number;
}

/** One bounded step of a release (lua/releaseHeld-17.lua): at most `batch` jobs move. */
export async function releaseHeldBatch(runner: ScriptRunner, keys: ThrottleKeys, queue: string, batch = RELEASE_BATCH): Promise<ReleaseBatch> {
  const { status, released, left } = await runReleaseHeld(runner, {
    bullmqKeys: new QueueKeys(keys.prefix).getKeys(queue), queueKeys: keys.queue(queue), mostJobs: batch,
  });
  return { status: status === ReleaseHeldStatus.Done ? 'done' : status === ReleaseHeldStatus.Declared ? 'declared' : 'more', released, left };
}

/**
 * Puts every job the throttle layer holds for `queue` back into bullmq's lists, in queue order, in bounded
 * batches, unless (or from the moment) a live worker declares throttles on the queue. The queue's scheduler
 * state goes once nothing is held.
 */
export async function releaseHeldJobs(runner: ScriptRunner, keys: ThrottleKeys, queue: string, batch = RELEASE_BATCH): Promise<ReleaseOutcome> {
  // Removals seen now are counted out once, before the jobs are looked at.
  await forgetRemovedJobs(runner, new QueueKeys(keys.prefix).getKeys(queue).events, keys.queue(queue));
  let released = 0;
  for (;;) {
    const step = await releaseHeldBatch(runner, keys, queue, batch);
    released += step.released;
    if (step.status !== 'more') return { released, complete: step.status === 'done' };
  }
}

/**
 * A worker's share in "a throttle is in effect only while some live worker declares it": on close it puts
 * back its queue's held jobs when no other live worker declares the queue, and on each heartbeat those of
 * queues whose every worker's declarations lapsed (the registry names them to whoever drops the entries).
 * A release that fails (Redis unreachable) is tried again on the next heartbeat, and so is one refused
 * while the lapsed worker still looks alive in the queue's own workers set (it is refreshed just after the
 * registry, on the queue's Redis clock, so it can lapse a moment later): up to REFUSED_TRIES times.
 */
export class HeldJobRelease {
  /** Queue -> refusals so far. */
  private readonly pending = new Map<string, number>();
  private readonly keys: ThrottleKeys;

  constructor(prefix: string, private readonly logger: Logger) {
    this.keys = new ThrottleKeys(prefix);
  }

  /** Releases the held jobs of `queues` and of any queue left from an earlier try. */
  async release(runner: ScriptRunner, queues: Iterable<string>): Promise<void> {
    for (const queue of queues) if (!this.pending.has(queue)) this.pending.set(queue, 0);
    for (const [queue, refusals] of [...this.pending]) {
      try {
        const { released, complete } = await releaseHeldJobs(runner, this.keys, queue);
        if (!complete && released === 0 && refusals + 1 < REFUSED_TRIES) this.pending.set(queue, refusals + 1);
        else this.pending.delete(queue);
        if (released > 0) {
          this.logger.info({ queue, released, complete }, complete
            ? 'no live worker declares throttles on the queue: its held jobs went back to wait'
            : 'held jobs went back to wait until a worker declaring throttles on the queue started');
        }
      } catch (error) {
        this.logger.warn({ queue, err: error }, 'could not put held jobs back to wait; will retry');
      }
    }
  }
}

import type { Job } from 'bullmq';

/** moveToFinished's KEYS and ARGV as bullmq builds them (moveToCompletedArgs / moveToFailedArgs). */
export type FinishArgs = (string | number | boolean | Buffer | undefined)[];

/**
 * What the gate needs of bullmq's side of one worker, whatever the line: bullmq 6's RedisQueueBackend
 * is one as it is; bullmq 5's adapter builds one from the Worker and its `scripts`.
 */
export interface GatedQueue {
  /** The worker's (non-blocking) Redis connection. */
  readonly client: Promise<unknown>;
  /** bullmq's keys of the queue: wait, active, marker, ... and '' (the queue's key prefix). */
  readonly keys: Readonly<Record<string, string>>;
  /** Truthy while the worker closes: no next job is fetched then. */
  readonly closing?: unknown;
  /** bullmq's RedisConnection of the worker, whose `error` events tell a refused connection (wrong password) early. */
  readonly connection?: unknown;
  moveToCompletedArgs(job: never, returnValue: unknown, removeOnComplete: never, token: string, fetchNext: boolean): FinishArgs;
  finishedErrors(error: { code: number; jobId: string; command: string; state: string }): Error;
  /** bullmq's own moveToFinished, ungated: for completions a batch could not make. */
  moveToFinished(jobId: string, args: FinishArgs): Promise<unknown>;
}

/** What a finishing call resolves to, as the gate hands back its slot's next job in `result`. */
export interface Finished {
  result?: unknown;
}

/**
 * The gate's calls that an adapter maps its line's hooks onto (ThrottleGate implements them). Every
 * delivery path goes through one of them: the main loop's fetch (deliver), the fetch after a completion or
 * failure (finishThenFetch), the fetch after a move to delayed (fetchAfterMove).
 */
export interface Gate {
  /** Called once, when the worker's bullmq side exists. */
  attach(queue: GatedQueue, workerOptions: { name?: string; lockDuration?: number }): void;
  /** bullmq's main loop (or getNextJob, or a delayed job's slot) asks for a job: a moveToActive reply. */
  deliver(token: string, name?: string): Promise<unknown[]>;
  /** A completion or failure made with fetch-next off; fetches the slot's next job through the gate when fetchNext. */
  finishThenFetch<T extends Finished>(finishing: Promise<T>, token: string, fetchNext: boolean): Promise<T>;
  /** Completes a job in a batch (without fetching), as bullmq 6's backend.moveToCompleted answers. */
  complete(job: never, returnValue: unknown, removeOnComplete: never, token: string): Promise<{ result: unknown; finishedOn: unknown }>;
  /** Completes a job in a batch from moveToFinished's arguments (fetch-next off), as bullmq's moveToFinished answers. */
  completeFromArgs(jobId: string, args: FinishArgs): Promise<unknown[]>;
  /** After a move to delayed made with fetch-next off: the next job through the gate when fetchNext, else `result`. */
  fetchAfterMove(result: unknown, token: string | undefined, fetchNext: boolean): Promise<unknown>;
}

/**
 * One bullmq line: how a Worker of it is hooked so that every delivery goes through the gate, and which of
 * our Lua variants works with its Lua. One small file per line (bullmq5.ts, bullmq6.ts).
 */
export interface BullmqAdapter {
  readonly line: 5 | 6;
  /** The versions of this line it is built and tested on, as a semver range. */
  readonly supportedRange: string;
  /** Our includes written for this line's Lua: lua/includes/<luaVariant>/ (`--- @include "bullmqLine/x"`). */
  readonly luaVariant: string;
  /** The 4th argument of this line's Worker constructor (bullmq 6's backend factory), or undefined. */
  workerConstructorArg(gate: Gate): unknown;
  /** Hooks what the constructor could not, once Worker's constructor has run. */
  afterConstruct(worker: object, gate: Gate): void;
  /** The worker's protected moveToActive as this line calls it (a slot takes its handed-over next job through it). */
  moveToActive(worker: object, token: string): Promise<Job | undefined>;
}

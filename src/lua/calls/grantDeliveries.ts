import { ScriptCallSpec, ScriptRunner } from '../scripts';
import { CallConfirmation, flagArg, ScriptArg, variableCall, variableKeysScript } from './scriptCall';

/**
 * lua/grantDeliveries-n.lua, in the namespace's slot (Grantor.grant): decides a batch of deliveries in order, each
 * granted with its tokens counted in every limit of every bucket it draws from, or refused with nothing counted.
 * Its call goes through ReplicaConfirmation.
 */
export const grantDeliveriesScript = variableKeysScript('grantDeliveries');

/** A delivery's r_d when it was granted (else the earliest time, ms on the Redis clock, at which it could fit). */
export const GRANTED = 0;

/** One counter of the batch (KEYS[i]): a window counter with its N and W, or a rate. */
export type GrantCounter =
  | { readonly key: string; readonly window: { readonly max: number; readonly windowMs: number } }
  | { readonly key: string; readonly rate: { readonly n: number; readonly perMs: number; readonly burst: number } };

export interface GrantDeliveriesInput {
  /** h: a token counts against a window of W + h. */
  readonly leaseMs: number;
  /** Each counter named once, in the order the deliveries refer to them (1-based). */
  readonly counters: readonly GrantCounter[];
  /** Per delivery: the counters it draws from (1-based index into `counters`), with its cost in each. */
  readonly deliveries: readonly (readonly { readonly counter: number; readonly cost: number }[])[];
  /** The throttle namespace's key prefix. */
  readonly throttlePrefix: string;
  /** Redis keeps acknowledged writes (durableRedis). */
  readonly durableRedis: boolean;
  /** The Grantor's id: a gather after a change of node expects it while its grants may count. */
  readonly grantorId: string;
  /** How long (ms) a grant made now may count: the longest window it granted in, and h. */
  readonly countsForMs: number;
  /** "<encoded throttle>:<longest ms>,..." of every throttle the Grantor granted: what holds if it never tells. */
  readonly declared: string;
  /** The node identity the Grantor saw recorded before ('' for none). */
  readonly knownNodeId: string;
}

export interface GrantDeliveriesReply {
  /** The Redis time of the grant (us). */
  nowUs: number;
  /** The epoch of a gather that holds a counter of the batch ('' when none does): the Grantor tells it what it granted. */
  gathering: string;
  /** Per delivery: GRANTED, or the earliest time (ms, Redis clock) at which it could fit. */
  retryAt: number[];
}

export function grantDeliveriesCall(input: GrantDeliveriesInput): ScriptCallSpec {
  const args: ScriptArg[] = [input.leaseMs, input.counters.length];
  for (const counter of input.counters) {
    if ('window' in counter) args.push(counter.window.max, counter.window.windowMs);
    else args.push(`${counter.rate.n} ${counter.rate.perMs} ${counter.rate.burst}`, 'r');
  }
  args.push(input.deliveries.length);
  for (const draws of input.deliveries) {
    args.push(draws.length);
    for (const { counter, cost } of draws) args.push(counter, cost);
  }
  args.push(input.throttlePrefix, flagArg(input.durableRedis), input.grantorId, input.countsForMs, input.declared, input.knownNodeId);
  return variableCall(grantDeliveriesScript, input.counters.map((counter) => counter.key), args);
}

/** Decides the batch; the reply is answered once a replica holds what it granted. */
export function runGrantDeliveries(runner: ScriptRunner, input: GrantDeliveriesInput, confirmation: CallConfirmation): Promise<GrantDeliveriesReply> {
  return confirmation.run(runner, grantDeliveriesCall(input), grantedAnyDelivery).then(parseGrantDeliveriesReply);
}

export function parseGrantDeliveriesReply(raw: unknown): GrantDeliveriesReply {
  const reply = raw as (number | string)[];
  return { nowUs: Number(reply[0]), gathering: String(reply[1]), retryAt: reply.slice(2).map(Number) };
}

/** A reply that granted at least one delivery: what ReplicaConfirmation must confirm. */
export function grantedAnyDelivery(raw: unknown): boolean {
  return (raw as (number | string)[]).slice(2).some((retryAt) => Number(retryAt) === GRANTED);
}

import { ScriptRunner } from '../scripts';
import { BucketHistory, pushBucketHistory } from './readQueueHistory';
import { fixedCall, fixedKeysScript, ScriptArg, sendCall } from './scriptCall';

/**
 * lua/reportDeliveries-1.lua, in the namespace's slot: an exact worker (or a Grantor of the API) tells a workers'
 * gather (after a restart or failover lost what the node counted) what it delivered (or granted) lately, from its
 * own memory, or that it cannot.
 */
export const reportDeliveriesScript = fixedKeysScript('reportDeliveries', ['slot']);

export enum ReportDeliveriesState {
  /** No such gather (over, or another epoch). */
  NoGather = 0,
  Reported = 1,
  /** Reported, and the gather ended. */
  GatherEnded = 2,
}

export interface ReportDeliveriesInput {
  /** KEYS[1]: the namespace's registry version key (it names the slot). */
  readonly slot: string;
  readonly throttlePrefix: string;
  readonly workerId: string;
  /** The gather's epoch. */
  readonly epoch: string;
  /** "<encoded throttle>:<longest ms>,..." the worker declares. */
  readonly declared: string;
  /** Workers it saw alive, and the same list for each. */
  readonly peers: readonly (readonly [string, string])[];
  /** What it delivered lately, per bucket; null when it cannot tell (ARGV[4] '0'). */
  readonly history: BucketHistory | null;
  /** The longest lease (ms) those deliveries were counted with: they are counted again at least that long. */
  readonly leaseMs: number;
  /**
   * What a Grantor of the API granted lately, per window counter (its throttles may have no published limits to
   * find the counters by); none for a worker.
   */
  readonly counters?: CounterHistory;
}

/** Per window counter: its bucket id ("<encoded throttle>=<bucket>"), N, W (ms), and (agoUs, count) pairs. */
export type CounterHistory = readonly {
  readonly bucketId: string;
  readonly max: number;
  readonly windowMs: number;
  readonly slots: readonly (readonly [agoUs: number, count: number])[];
}[];

export interface ReportDeliveriesReply {
  nowUs: number;
  /** Deliveries counted again. */
  counted: number;
  state: ReportDeliveriesState;
}

export function runReportDeliveries(runner: ScriptRunner, input: ReportDeliveriesInput): Promise<ReportDeliveriesReply> {
  const tells = input.history !== null;
  const args: ScriptArg[] = [input.throttlePrefix, input.workerId, input.epoch, tells ? '1' : '0', input.leaseMs, input.declared, input.peers.length];
  for (const [id, declared] of input.peers) args.push(id, declared);
  pushBucketHistory(args, input.history ?? []);
  const counters = tells ? input.counters ?? [] : [];
  args.push(counters.length);
  for (const { bucketId, max, windowMs, slots } of counters) {
    args.push(bucketId, max, windowMs, slots.length);
    for (const [agoUs, count] of slots) args.push(agoUs, count);
  }
  return sendCall(runner, fixedCall(reportDeliveriesScript, { slot: input.slot }, args)).then((raw) => {
    const reply = raw as number[];
    return { nowUs: Number(reply[0]), counted: Number(reply[1]), state: Number(reply[2]) };
  });
}

import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/intakeJobs-5.lua, on the queue: takes jobs producers added (wait, then prioritized) for the worker to classify,
 * each into the intake set with a lease, and answers their fields.
 */
export const intakeJobsScript = fixedKeysScript('intakeJobs', ['wait', 'prioritized', 'intake', 'meta', 'marker']);

/** A job taken for classification (lua/intakeJobs-5.lua, lua/reclaimStaleJobs-8.lua): its fields as stored. */
export interface IntakeRecord {
  readonly id: string;
  readonly name: string | null;
  readonly data: string | null;
  readonly opts: string | null;
  readonly priority: string | null;
  readonly storedAttributes: string | null;
}

export interface IntakeReply {
  nowUs: number;
  jobs: IntakeRecord[];
}

export interface IntakeJobsInput {
  /** bullmq's keys of the queue: wait, prioritized, meta, marker (KEYS[1, 2, 4, 5]), and '' its key prefix. */
  readonly bullmqKeys: Readonly<Record<string, string>>;
  /** KEYS[3]: the queue's intake (ZSET id -> lease expiry ms). */
  readonly intake: string;
  readonly mostJobs: number;
  /** How long a job's lease lasts (ms): then it goes back to the front of wait. */
  readonly leaseMs: number;
}

export function runIntakeJobs(runner: ScriptRunner, input: IntakeJobsInput): Promise<IntakeReply> {
  const keys = input.bullmqKeys;
  const call = fixedCall(intakeJobsScript, { wait: keys.wait, prioritized: keys.prioritized, intake: input.intake, meta: keys.meta, marker: keys.marker }, [
    keys[''], input.mostJobs, input.leaseMs,
  ]);
  return sendCall(runner, call).then((raw) => parseIntakeReply(raw as unknown[]));
}

/** { nowUs, n, then per job: id, name, data, opts, priority, stored attributes (or false) }. */
export function parseIntakeReply(reply: unknown[]): IntakeReply {
  const jobs: IntakeRecord[] = [];
  const count = Number(reply[1]);
  const text = (value: unknown) => (value === null || value === undefined ? null : String(value));
  for (let i = 0; i < count; i++) {
    const at = 2 + 6 * i;
    jobs.push({
      id: String(reply[at]), name: text(reply[at + 1]), data: text(reply[at + 2]), opts: text(reply[at + 3]),
      priority: text(reply[at + 4]), storedAttributes: text(reply[at + 5]),
    });
  }
  return { nowUs: Number(reply[0]), jobs };
}

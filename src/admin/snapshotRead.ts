import { ScriptRunner } from '../lua/scripts';
import { runReadSnapshot, SnapshotOp } from '../lua/calls/readSnapshot';

/** What one read answered: the node's time (ms) and each key's reply, in the order they were asked. */
export interface Snapshot {
  readonly nowMs: number;
  readonly replies: readonly unknown[];
  /** The read that asked: a value is taken only from its own read's snapshot. */
  readonly read: SnapshotRead;
}

/** One key's reading, taken from the snapshot that read it. */
export type SnapshotValue<T> = (snapshot: Snapshot) => T;

function flatToRecord(flat: unknown): Record<string, string> {
  const record: Record<string, string> = {};
  const list = (flat ?? []) as string[];
  for (let i = 0; i + 1 < list.length; i += 2) record[list[i]] = list[i + 1];
  return record;
}

function scored(flat: unknown): [string, number][] {
  const list = (flat ?? []) as string[];
  const pairs: [string, number][] = [];
  for (let i = 0; i + 1 < list.length; i += 2) pairs.push([list[i], Number(list[i + 1])]);
  return pairs;
}

/**
 * Keys to read at one moment (lua/readSnapshot-n.lua): each method asks for one key and returns how to take its
 * reading from the snapshot. Every key must be of one slot in Redis Cluster (the namespace's, or one queue's):
 * a Cluster refuses a script across slots, so figures of several slots are read one slot per call.
 */
export class SnapshotRead {
  private readonly reads: { key: string; op: SnapshotOp }[] = [];

  get size(): number {
    return this.reads.length;
  }

  get(key: string): SnapshotValue<string | null> {
    return this.add(key, 'get', (reply) => (reply ?? null) as string | null);
  }

  hget(key: string, field: string): SnapshotValue<string | null> {
    return this.add(key, `hget:${field}`, (reply) => (reply ?? null) as string | null);
  }

  zscore(key: string, member: string): SnapshotValue<number | null> {
    return this.add(key, `zscore:${member}`, (reply) => (reply === null || reply === undefined ? null : Number(reply)));
  }

  hgetall(key: string): SnapshotValue<Record<string, string>> {
    return this.add(key, 'hgetall', flatToRecord);
  }

  /** Field names hold no ',': fixed names, encoded throttle names (encodeSegment spells ',' %2C); not bucket segments (hget). */
  hmget(key: string, fields: readonly string[]): SnapshotValue<(string | null)[]> {
    return this.add(key, `hmget:${fields.join(',')}`, (reply) => ((reply ?? []) as (string | null)[]).map((v) => v ?? null));
  }

  /** ZCOUNT (now, +inf): the members still in force. */
  live(key: string): SnapshotValue<number> {
    return this.add(key, 'live', (reply) => Number(reply ?? 0));
  }

  /** The lowest member and its score, or null when the set is empty. */
  first(key: string): SnapshotValue<[string, number] | null> {
    return this.add(key, 'first', (reply) => scored(reply)[0] ?? null);
  }

  /** The n members of highest positive score, highest first. */
  top(key: string, n: number): SnapshotValue<[string, number][]> {
    return this.add(key, `top:${n}`, scored);
  }

  async run(runner: ScriptRunner): Promise<Snapshot> {
    if (this.reads.length === 0) throw new Error('SnapshotRead.run: nothing to read');
    const { nowMs, replies } = await runReadSnapshot(runner, { reads: this.reads });
    return { nowMs, replies, read: this };
  }

  private add<T>(key: string, op: SnapshotOp, parse: (reply: unknown) => T): SnapshotValue<T> {
    const index = this.reads.length;
    this.reads.push({ key, op });
    return (snapshot) => {
      if (snapshot.read !== this) throw new Error(`SnapshotRead: the reading of ${key} was taken from another read's snapshot`);
      return parse(snapshot.replies[index]);
    };
  }
}

/**
 * Runs `main` and, beside it, each of `others` that is not `main` itself (a read of another slot), and answers
 * which snapshot holds a read's values.
 */
export async function runTogether(main: SnapshotRead, mainRunner: ScriptRunner, others: readonly SnapshotRead[], othersRunner: ScriptRunner): Promise<(read: SnapshotRead) => Snapshot> {
  const separate = [...new Set(others.filter((read) => read !== main))];
  const [mainSnapshot, ...snapshots] = await Promise.all([main.run(mainRunner), ...separate.map((read) => read.run(othersRunner))]);
  return (read) => (read === main ? mainSnapshot : snapshots[separate.indexOf(read)]);
}

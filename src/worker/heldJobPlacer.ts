import { QueueThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { RedisClient } from '../redis/connection';
import { intakeRecords } from './intakeRecords';
import { IntakeRecord, JobClassifier, Placement } from './jobClassifier';
import { QueueConfig } from './queueConfig';

/** How many jobs one intake takes for classification, and how long their lease lasts. */
const INTAKE_BATCH = 200;
const INTAKE_LEASE_MS = 30_000;

/** What the placer needs of its gate. */
export interface PlacerContext {
  readonly queue: string;
  readonly queueKeys: QueueThrottleKeys;
  readonly classifier: JobClassifier;
  runner(): ScriptRunner;
  /** bullmq's keys of the queue and the worker's connection. */
  bullmqKeys(): Readonly<Record<string, string>>;
  client(): Promise<RedisClient>;
  /** The config the worker holds now (undefined before it has one). */
  config(): QueueConfig | undefined;
  /** Reads the registry again and adopts what it adds up to. */
  refreshConfig(): Promise<void>;
  closed(): boolean;
  /** Reports a failure of background work (sparingly). */
  report(what: string, error: unknown): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/**
 * Classifies jobs in the worker and holds each in its class: newly added jobs taken from wait/prioritized
 * in batches (intakeJobs, then classifyJobs), and held jobs of classes from an older config generation,
 * taken back through classification (reclaimStaleJobs). One of each runs at a time.
 */
export class HeldJobPlacer {
  private classifying?: Promise<number>;
  private reclaiming?: Promise<void>;

  constructor(private readonly context: PlacerContext) {}

  /** Takes a batch of newly added jobs and holds each in its class; resolves to how many were placed. */
  classifyBatch(): Promise<number> {
    this.classifying ??= (async () => {
      try {
        const keys = this.context.bullmqKeys();
        const reply = (await this.context.runner().run('intakeJobs', [keys.wait, keys.prioritized, this.context.queueKeys.intake, keys.meta, keys.marker], [
          keys[''], INTAKE_BATCH, INTAKE_LEASE_MS,
        ])) as unknown[];
        return await this.place(intakeRecords(reply));
      } finally {
        this.classifying = undefined;
      }
    })();
    return this.classifying;
  }

  private async place(records: IntakeRecord[]): Promise<number> {
    if (records.length === 0) return 0;
    const { queueKeys: q } = this.context;
    for (let attempt = 0; attempt < 3; attempt++) {
      const config = this.context.config()!;
      const bullmqKeys = this.context.bullmqKeys();
      const placements = records.map((record): Placement => this.context.classifier.place(record, config));
      const args: (string | number)[] = [bullmqKeys[''], q.base, config.gen, placements.length];
      for (const p of placements) args.push(p.id, p.member, p.priority, p.lifo ? 1 : 0, p.attributes);
      const [placed] = (await this.context.runner().run('classifyJobs', [q.intake, q.state, q.readyJobs, q.classes, bullmqKeys.marker, q.classState, q.putBack], args)) as number[];
      if (Number(placed) >= 0) return Number(placed);
      // Another worker published a newer config generation: catch up and classify again.
      await this.context.refreshConfig();
    }
    this.context.warn({ queue: this.context.queue, jobs: records.length }, 'config kept changing while classifying; jobs return to wait when their lease ends');
    return 0;
  }

  /** Moves held jobs of classes from an older config generation back through classification. */
  reclaimInBackground(): void {
    if (this.reclaiming || this.context.closed() || !this.context.config()) return;
    this.reclaiming = (async () => {
      try {
        for (;;) {
          const config = this.context.config();
          if (this.context.closed() || !config) return;
          const gen = config.gen;
          const members = await this.staleClasses(gen);
          if (members.length === 0) return;
          const q = this.context.queueKeys;
          const reply = (await this.context.runner().run('reclaimStaleJobs', [q.stale, q.classes, q.intake, q.state, q.readyClasses, q.classState, q.blockedSince, q.removedHeld], [
            this.context.bullmqKeys()[''], q.base, gen, INTAKE_BATCH, INTAKE_LEASE_MS, ...members,
          ])) as unknown[];
          const records = intakeRecords(reply);
          if (records.length > 0) await this.place(records);
        }
      } catch (error) {
        this.context.report('reclassifying held jobs', error);
      } finally {
        this.reclaiming = undefined;
      }
    })();
  }

  /** Resolves once the classification and reclassification under way (if any) have ended. */
  async settled(): Promise<void> {
    await this.classifying?.catch(() => undefined);
    await this.reclaiming;
  }

  private async staleClasses(gen: string): Promise<string[]> {
    const client = await this.context.client();
    const { stale, classes } = this.context.queueKeys;
    const found = new Set<string>(await client.srandmember(stale, 64));
    let cursor = '0';
    do {
      const [next, members] = await client.sscan(classes, cursor, 'COUNT', 500);
      cursor = next;
      for (const member of members) if (!member.startsWith(`${gen}/`)) found.add(member);
    } while (cursor !== '0' && found.size < 64);
    return [...found].filter((member) => !member.startsWith(`${gen}/`)).slice(0, 64);
  }
}

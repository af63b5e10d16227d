import { QueueThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../../lua/scripts';
import { runClassifyJobs } from '../../lua/calls/classifyJobs';
import { IntakeRecord, runIntakeJobs } from '../../lua/calls/intakeJobs';
import { runReclaimStaleJobs } from '../../lua/calls/reclaimStaleJobs';
import { RedisClient } from '../../redis/connection';
import { JobClassifier, Placement } from '../../queueState/jobClassifier';
import { QueueConfig } from '../../queueState/queueConfig';

/** How many jobs one intake takes for classification, and how long their lease lasts. */
const INTAKE_BATCH = 200;
const INTAKE_LEASE_MS = 30_000;

/** What the placer needs of its gate. */
export interface PlacerContext {
  readonly queue: string;
  readonly queueKeys: QueueThrottleKeys;
  readonly classifier: JobClassifier;
  readonly runner: ScriptRunner;
  /** bullmq's keys of the queue and the worker's connection. */
  readonly bullmqKeys: Readonly<Record<string, string>>;
  readonly client: RedisClient;
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
        const { jobs } = await runIntakeJobs(this.context.runner, {
          bullmqKeys: this.context.bullmqKeys, intake: this.context.queueKeys.intake, mostJobs: INTAKE_BATCH, leaseMs: INTAKE_LEASE_MS,
        });
        return await this.place(jobs);
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
      const bullmqKeys = this.context.bullmqKeys;
      const placements = records.map((record): Placement => this.context.classifier.place(record, config));
      const reply = await runClassifyJobs(this.context.runner, {
        queueKeys: q, marker: bullmqKeys.marker, bullmqPrefix: bullmqKeys[''], gen: config.gen, jobs: placements,
      });
      if (!reply.staleGeneration) return reply.placed;
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
          const { jobs: records } = await runReclaimStaleJobs(this.context.runner, {
            queueKeys: q, bullmqPrefix: this.context.bullmqKeys[''], gen, mostJobs: INTAKE_BATCH, leaseMs: INTAKE_LEASE_MS, classes: members,
          });
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
    const client = this.context.client;
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

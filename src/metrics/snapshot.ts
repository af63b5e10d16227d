import { ThrottleAdmin } from '../admin/ThrottleAdmin';
import { QueueStats, ThrottleStats } from '../admin/types';
import { unlessGone } from '../admin/unlessGone';

/** Everything one scrape reports, read through ThrottleAdmin. */
export interface MetricsSnapshot {
  throttles: ThrottleStats[];
  queues: QueueStats[];
}


/**
 * The live queues (or the listed ones) and the throttles declared on them. Bucket lists are never read
 * (`top: 0`), so no key value is ever fetched, let alone reported.
 */
export async function readSnapshot(admin: ThrottleAdmin, onlyQueues?: readonly string[]): Promise<MetricsSnapshot> {
  const live = await admin.live();
  const queues = onlyQueues ? [...new Set(onlyQueues)].sort() : live.queues;
  const wanted = new Set(queues);
  const throttleNames = live.throttles.filter((t) => !onlyQueues || t.queues.some((q) => wanted.has(q))).map((t) => t.name);
  const [throttles, queueStats] = await Promise.all([
    Promise.all(throttleNames.map((name) => unlessGone(admin.throttleStats(name, { top: 0 })))),
    Promise.all(queues.map((queue) => unlessGone(admin.queueStats(queue)))),
  ]);
  return {
    throttles: throttles.filter((t): t is ThrottleStats => t !== null),
    queues: queueStats.filter((q): q is QueueStats => q !== null),
  };
}

/**
 * Hands every metric of one scrape the same snapshot: prom-client calls each metric's collect() at once,
 * so calls made while a read is in flight join it. A read that fails gives null; one that outlasts
 * `timeoutMs` gives null to that scrape and is joined by the next (so a Redis outage queues at most one
 * read's commands, whatever the scrape rate).
 */
export class SnapshotSource {
  private reading: Promise<MetricsSnapshot | null> | undefined;
  private scrape: Promise<MetricsSnapshot | null> | undefined;
  private closed = false;

  constructor(
    private readonly read: () => Promise<MetricsSnapshot>,
    private readonly timeoutMs: number,
  ) {}

  current(): Promise<MetricsSnapshot | null> {
    if (this.closed) return Promise.resolve(null);
    if (!this.scrape) {
      if (!this.reading) {
        const reading = this.read().catch(() => null);
        this.reading = reading;
        void reading.then(() => {
          if (this.reading === reading) this.reading = undefined;
        });
      }
      const scrape = withTimeout(this.reading, this.timeoutMs);
      this.scrape = scrape;
      void scrape.then(() => {
        if (this.scrape === scrape) this.scrape = undefined;
      });
    }
    return this.scrape;
  }

  close(): void {
    this.closed = true;
  }
}

function withTimeout<T>(promise: Promise<T | null>, ms: number): Promise<T | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    timer.unref?.();
    void promise.then((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}

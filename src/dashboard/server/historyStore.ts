import type { RedisClient } from '../../redis/connection';
import type { HistorySample } from './history';

/** The entries' format: an entry of another version is skipped on reading (a dashboard upgraded or rolled back). */
const FORMAT = 1;

interface StoredSample {
  v: number;
  s: HistorySample;
}

/**
 * The charts' history in Redis, so that a dashboard restarted (or a second one on the same namespace) shows what
 * was sampled before: one LIST (ThrottleKeys.dashboardHistory), a JSON entry per sample, capped to the
 * history's capacity by LTRIM on every write, and lapsing twice the history's span after the last write
 * when no dashboard samples any more.
 */
export class HistoryStore {
  constructor(
    private readonly client: RedisClient,
    private readonly key: string,
    private readonly capacity: number,
    private readonly spanMs: number,
  ) {}

  /** The samples kept, oldest first; entries that do not parse, or of another format, are skipped. */
  async load(): Promise<HistorySample[]> {
    const entries = await this.client.lrange(this.key, -this.capacity, -1);
    const samples: HistorySample[] = [];
    for (const entry of entries) {
      try {
        const stored = JSON.parse(entry) as StoredSample;
        if (stored.v === FORMAT && Array.isArray(stored.s)) samples.push(stored.s);
      } catch {
        // Not JSON: not ours to read; LTRIM drops it in time.
      }
    }
    // Entries of two dashboards come in the order they were written, not always that of their reads.
    return samples.sort((a, b) => firstAt(a) - firstAt(b));
  }

  async save(sample: HistorySample): Promise<void> {
    if (sample.length === 0) return;
    const entry: StoredSample = { v: FORMAT, s: sample };
    // A pipeline, not MULTI: the ACL profile the README gives the workers' users has no MULTI, and a sample
    // written but not yet trimmed for a moment harms nothing.
    const replies = await this.client.pipeline()
      .rpush(this.key, JSON.stringify(entry))
      .ltrim(this.key, -this.capacity, -1)
      .pexpire(this.key, 2 * this.spanMs)
      .exec();
    const failed = replies?.find(([error]) => error);
    if (failed) throw failed[0];
  }
}

function firstAt(sample: HistorySample): number {
  return sample.length > 0 ? sample[0].at : 0;
}

import { DeliveryHistory, historySample } from './history';
import type { HistoryStore } from './historyStore';
import type { EventStreams } from './sse';
import type { OverviewReading } from './readOverview';
import type { WireOverview } from '../wire';

/** How long the start waits for the history kept in Redis. */
const RESTORE_WAIT_MS = 3_000;
/** How long closing waits for the last write of a sample (Redis may be gone). */
const LAST_WRITE_WAIT_MS = 1_000;

export interface SamplerOptions {
  /** The overview; `queues: false`: the throttles only, all the history needs. */
  read(options: { queues: boolean }): Promise<OverviewReading>;
  history: DeliveryHistory;
  /** Where the history is kept across restarts. */
  store: HistoryStore;
  streams: EventStreams;
  everyMs: number;
  writes: boolean;
}

/**
 * Reads the overview once every `everyMs`, records each throttle's sample in the history (and in Redis) and
 * sends the overview to every open page; with no page open, it reads the throttles only, for the history.
 * Requests for the overview join a read already under way, so that however many pages and requests there
 * are, Redis sees at most about one read at a time. It starts by reading back the history kept in Redis.
 */
export class OverviewSampler {
  private reading: Promise<WireOverview> | undefined;
  private last: WireOverview | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private saving: Promise<void> = Promise.resolve();
  /** Set once sampling began: a history read back later than that would go behind newer samples, and is dropped. */
  private sampling = false;
  /** Settles once the history kept in Redis is read back (or could not be: the history then starts empty). */
  readonly restored: Promise<void>;
  private restoredNow!: () => void;

  constructor(private readonly options: SamplerOptions) {
    this.restored = new Promise((resolve) => { this.restoredNow = resolve; });
  }

  start(): void {
    // Commands wait for Redis to come back (maxRetriesPerRequest: null): an unreachable Redis must not keep the
    // sampler, and so the page's "cannot read Redis", from starting. The history then starts from now.
    const giveUp = new Promise<void>((resolve) => setTimeout(resolve, RESTORE_WAIT_MS).unref());
    const load = this.options.store.load().then((samples) => {
      if (!this.sampling) for (const sample of samples) this.options.history.record(sample);
    });
    void Promise.race([load, giveUp])
      .catch(() => undefined)
      .finally(() => {
        this.sampling = true;
        this.restoredNow();
        this.schedule(0);
      });
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), delayMs);
    // A dashboard mounted in an app must not keep its process alive by itself.
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const started = Date.now();
    if (this.options.streams.size > 0) {
      const overview = await this.current();
      if (this.stopped) return;
      // Only the sampler's own reads go into the history, so that it keeps one point a second however often pages ask.
      if (overview.error === undefined) this.record(overview);
      this.options.streams.broadcast('overview', overview);
    } else {
      // No page open: the history goes on (so a page opened later has it), without the queues' reads.
      const reading = await this.options.read({ queues: false }).catch(() => undefined);
      if (this.stopped) return;
      if (reading) this.record(reading);
    }
    // On the wall clock of this process: only the pace of sampling, never a time shown.
    this.schedule(Math.max(0, this.options.everyMs - (Date.now() - started)));
  }

  private record(reading: OverviewReading): void {
    const sample = historySample(reading);
    this.options.history.record(sample);
    // One write at a time, in order; a failed one loses that sample from Redis only (the page has it).
    this.saving = this.saving.then(() => this.options.store.save(sample)).catch(() => undefined);
  }

  /** A fresh overview (or the one being read now). A failed read answers the last figures with the error. */
  current(): Promise<WireOverview> {
    this.reading ??= this.options.read({ queues: true }).then(
      (reading) => {
        const overview: WireOverview = { ...reading, writes: this.options.writes };
        this.last = overview;
        return overview;
      },
      (error: unknown) => ({
        ...(this.last ?? { at: Date.now(), queues: [], throttles: [], busiest: {} }),
        writes: this.options.writes,
        error: `cannot read Redis: ${error instanceof Error ? error.message : String(error)}`,
      }),
    ).finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  /** The last overview read, without reading (undefined before the first). */
  get latest(): WireOverview | undefined {
    return this.last;
  }

  /** Stops sampling; resolves once the last write to Redis is done (or given up on), so that the connection can close. */
  stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    return Promise.race([this.saving, new Promise<void>((resolve) => setTimeout(resolve, LAST_WRITE_WAIT_MS).unref())]);
  }
}

import { DeliveryHistory } from './history';
import type { EventStreams } from './sse';
import type { OverviewReading } from './readOverview';
import type { WireOverview } from '../wire';

export interface SamplerOptions {
  /** The overview; `queues: false`: the throttles only, all the history needs. */
  read(options: { queues: boolean }): Promise<OverviewReading>;
  history: DeliveryHistory;
  streams: EventStreams;
  everyMs: number;
  writes: boolean;
}

/**
 * Reads the overview once every `everyMs`, records each throttle's last window and busiest bucket in the history and sends the
 * overview to every open page; with no page open, it reads the throttles only, for the history. Requests for
 * the overview join a read already under way, so that however many pages and requests there are, Redis sees
 * at most about one read at a time.
 */
export class OverviewSampler {
  private reading: Promise<WireOverview> | undefined;
  private last: WireOverview | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: SamplerOptions) {}

  start(): void {
    this.schedule(0);
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
      if (overview.error === undefined) this.options.history.record(overview);
      this.options.streams.broadcast('overview', overview);
    } else {
      // No page open: the history goes on (so a page opened later has it), without the queues' reads.
      const reading = await this.options.read({ queues: false }).catch(() => undefined);
      if (this.stopped) return;
      if (reading) this.options.history.record(reading);
    }
    // On the wall clock of this process: only the pace of sampling, never a time shown.
    this.schedule(Math.max(0, this.options.everyMs - (Date.now() - started)));
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

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}

/**
 * A worker blocks on its queue's marker until the time it was given, but Redis only notices a blocking
 * command's timeout on its own clock tick (up to 100 ms late at the default hz), which would leave room
 * unused. So at that moment this sets the marker itself, and the blocked worker wakes on time. One timer,
 * for the earliest moment asked.
 */
export class MarkerWakeTimer {
  private timer?: NodeJS.Timeout;
  private at = Infinity;
  private stopped = false;

  constructor(private readonly setMarker: () => Promise<unknown>) {}

  /** Sets the marker at `localMs` (this process's clock), unless an earlier wake is already due. */
  wakeAt(localMs: number): void {
    if (this.stopped || localMs >= this.at) return;
    if (this.timer) clearTimeout(this.timer);
    this.at = localMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.at = Infinity;
      if (!this.stopped) void this.setMarker().catch(() => undefined);
    }, Math.max(0, localMs - Date.now()));
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}

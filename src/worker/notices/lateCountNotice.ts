import type { Logger } from 'pino';

/** At most one warning in this long: a loaded machine may pause many starts in a row. */
const SAID_EVERY_MS = 60_000;

/**
 * Says, sparingly, that a late start's longer count (lua/countLateStart-n.lua, lua/countLateLeased-1.lua) landed
 * too late: a window had released the start's tokens (its room may have been granted again), or a rate had granted
 * since. The process was paused, between its start check and the count, longer than a window (or a rate's
 * interval) less a call's time, and starts around it may exceed the limit. Nothing can undo that; the warning
 * says how late, how often, and what makes such pauses rare.
 */
export class LateCountNotice {
  private saidAt = -Infinity;
  private unsaid = 0;

  constructor(private readonly logger: Logger, private readonly queue: string) {}

  /** A start `tookMs` after its delivery call, whose deadline was `deadlineMs`, counted too late for `missed` limits. */
  missed(tookMs: number, deadlineMs: number, missed: number, now: number = performance.now()): void {
    this.unsaid++;
    if (now - this.saidAt < SAID_EVERY_MS) return;
    this.logger.warn(
      { queue: this.queue, startedAfterMs: Math.round(tookMs), deadlineMs, limits: missed, starts: this.unsaid },
      `a processor started ${Math.round(tookMs)} ms after its delivery (its deadline ${deadlineMs} ms), and counting it longer `
      + `came too late for ${missed === 1 ? 'its limit' : `${missed} of its limits`} (a window had released its tokens, or a rate had granted since): `
      + 'starts around it may exceed the limit '
      + `(${this.unsaid} such start${this.unsaid === 1 ? '' : 's'} since the last warning; worker.startDeadline.countedTooLate counts them). `
      + 'The process was paused longer than a window, or a rate\'s interval (per / n), between its start check and its processor: '
      + 'keep the machine\'s CPUs short of saturation, or give the throttle a longer interval.',
    );
    this.saidAt = now;
    this.unsaid = 0;
  }
}

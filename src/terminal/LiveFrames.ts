import { createLogUpdate } from 'log-update';
import { fitFrame } from './fitLines';

/** Where frames go: process.stdout, or anything shaped like it (a test's recorder). */
export interface TerminalOut {
  isTTY?: boolean;
  columns?: number;
  rows?: number;
  write(text: string): unknown;
}

/** The width views lay out for when the output is not a terminal (a pipe, a file): it has no width of its own. */
export const PLAIN_WIDTH = 100;

/**
 * Frames of a live view, shared by `watch` and the demo. On a terminal each frame replaces the last in place
 * (log-update: it rewrites only the lines that changed and hides the cursor meanwhile), cut to the terminal's
 * width and height; otherwise each frame is printed after the last, a blank line apart, as it is.
 */
export class LiveFrames {
  private logUpdate?: ReturnType<typeof createLogUpdate>;

  constructor(private readonly out: TerminalOut, private readonly plainWidth = PLAIN_WIDTH) {}

  get inPlace(): boolean {
    return this.out.isTTY === true;
  }

  /** The columns a frame's lines may use: the terminal's, else plainWidth. */
  get width(): number {
    return this.inPlace ? Math.max(20, this.out.columns ?? 80) : this.plainWidth;
  }

  draw(lines: readonly string[]): void {
    if (!this.inPlace) {
      this.out.write(`${lines.join('\n')}\n\n`);
      return;
    }
    // One line fewer than the terminal has: log-update counts the line the cursor ends on, and would cut a
    // taller frame from the top (the heading first).
    const height = Math.max(3, (this.out.rows ?? 24) - 1);
    this.logUpdate ??= createLogUpdate(this.out as NodeJS.WritableStream);
    this.logUpdate(fitFrame(lines, this.width, height).join('\n'));
  }

  /** Leaves the last frame where it is, the cursor visible on the line below it. */
  done(): void {
    this.logUpdate?.done();
    this.logUpdate = undefined;
  }
}

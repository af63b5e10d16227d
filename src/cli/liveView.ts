/**
 * Where `watch` writes its frames: on a terminal each frame replaces the last in place (cursor up, clear
 * each line, as src/demo/demoView.ts does); otherwise each frame is printed after the last, a blank line apart.
 */
export interface FrameSink {
  isTTY?: boolean;
  columns?: number;
  rows?: number;
  write(text: string): unknown;
}

export class LiveView {
  private drawnLines = 0;

  constructor(private readonly out: FrameSink) {}

  get inPlace(): boolean {
    return this.out.isTTY === true;
  }

  render(frame: string): void {
    let lines = frame.replace(/\n+$/, '').split('\n');
    if (!this.inPlace) {
      this.out.write(`${lines.join('\n')}\n\n`);
      return;
    }
    // Lines wider than the terminal would wrap, and a frame taller than it would scroll: either breaks
    // the cursor-up arithmetic, so cut both to fit.
    const width = Math.max(20, (this.out.columns ?? 120) - 1);
    const height = Math.max(3, (this.out.rows ?? 50) - 1);
    if (lines.length > height) lines = [...lines.slice(0, height - 1), `… ${lines.length - height + 1} more lines (enlarge the terminal)`];
    lines = lines.map((line) => (line.length > width ? `${line.slice(0, width - 1)}…` : line));
    let text = this.drawnLines > 0 ? `\x1b[${this.drawnLines}A` : '';
    text += lines.map((line) => `\x1b[2K${line}\n`).join('');
    text += '\x1b[J'; // a shorter frame than the last: clear what is left below it
    this.out.write(text);
    this.drawnLines = lines.length;
  }
}

/** The demo's live terminal view: one bar per bucket, redrawn in place on a terminal, printed each second otherwise. */
export interface BucketRow {
  label: string;
  limit: number | undefined;
  inLastSecond: number;
  delivered: number;
  total: number;
}

const BAR = 16;

export class DemoView {
  private drawnLines = 0;
  private lastPlain = -1;

  constructor(private readonly out: NodeJS.WriteStream) {}

  render(elapsedS: number, rows: BucketRow[]): void {
    const lines = [
      `bullmq-throttle demo: queue 'orders', ${elapsedS.toFixed(1)} s`,
      `${'bucket'.padEnd(30)} ${'deliveries in the last second'.padEnd(BAR + 12)} delivered / total`,
      ...rows.map((row) => {
        const scale = row.limit ?? Math.max(10, row.inLastSecond);
        const filled = Math.min(BAR, Math.round((row.inLastSecond / scale) * BAR));
        const bar = `[${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}]`;
        const rate = row.limit === undefined ? `${row.inLastSecond}`.padEnd(9) : `${row.inLastSecond}/${row.limit}`.padEnd(9);
        return `${row.label.padEnd(30)} ${bar} ${rate} ${String(row.delivered).padStart(4)} / ${row.total}`;
      }),
    ];
    if (this.out.isTTY) {
      if (this.drawnLines > 0) this.out.write(`\x1b[${this.drawnLines}A`);
      this.out.write(lines.map((line) => `\x1b[2K${line}\n`).join(''));
      this.drawnLines = lines.length;
    } else if (Math.floor(elapsedS) !== this.lastPlain) {
      this.lastPlain = Math.floor(elapsedS);
      this.out.write(`${lines.join('\n')}\n\n`);
    }
  }
}

import { bar } from '../cli/format';
import { textTable } from '../terminal/textTable';
import type { BucketRow } from './demoRows';

export type { BucketRow } from './demoRows';

const BAR = 16;

/** One frame of the demo's live view: a bar per bucket, its deliveries in the last second against its limit. */
export function demoFrame(elapsedS: number, rows: readonly BucketRow[]): string[] {
  return [
    `bullmq-throttle demo: queue 'orders', ${elapsedS.toFixed(1)} s`,
    ...textTable([
      ['bucket', 'in the last second', '', 'delivered', 'of'],
      ...rows.map((row) => [
        row.label,
        // Unthrottled jobs have no limit to fill: their bar is scaled to what they do.
        bar(row.inLastSecond, row.limit ?? Math.max(10, row.inLastSecond), BAR),
        row.limit === undefined ? `${row.inLastSecond}` : `${row.inLastSecond}/${row.limit}`,
        String(row.delivered),
        String(row.total),
      ]),
    ], { align: ['left', 'left', 'left', 'right', 'right'] }),
  ];
}

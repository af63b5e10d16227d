import uPlot from 'uplot';
import { clock, formatCount } from '../format';

/** Whole-number steps for counts: a count axis has no 0.5 tick. */
const COUNT_STEPS = [1, 2, 5].flatMap((m) => [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8].map((p) => m * p)).sort((a, b) => a - b);

export interface PlotSeries {
  label: string;
  stroke: string;
  width?: number;
  fill?: string;
  dash?: number[];
  /** A step line (a limit that changes at a sample, as an override does). */
  stepped?: boolean;
  /** The legend's text for a value when the cursor is on a sample; default: the count. */
  value?: (value: number, index: number) => string;
}

/**
 * A uPlot chart of counts over the last `spanMs` (Redis-clock times in ms): the x axis always spans the
 * history's length, so that a short history does not zoom in, and its ticks read HH:MM:SS only, so that
 * uPlot's date-and-time labels do not run into each other on a narrow card. Null values are gaps.
 */
export class TimePlot {
  private plot: uPlot | undefined;
  private readonly onResize = () => this.plot?.setSize({ width: this.width(), height: this.height });

  constructor(
    readonly element: HTMLElement,
    private readonly series: PlotSeries[],
    private readonly height: number,
    private readonly spanMs: number,
    /** Pixels between the count axis' ticks: less on a short chart, so that it shows more than 0. */
    private readonly ySpace = 30,
  ) {
    window.addEventListener('resize', this.onResize);
  }

  private width(): number {
    return Math.max(240, this.element.clientWidth || 420);
  }

  update(t: readonly number[], values: (number | null)[][]): void {
    const data: uPlot.AlignedData = [t.map((ms) => ms / 1000), ...values];
    if (this.plot) {
      this.plot.setData(data);
      // The legend shows the latest sample while the cursor is off the chart: refresh it with the new data.
      if (this.plot.cursor.idx == null) this.plot.setLegend({ idxs: data.map(() => null) });
      return;
    }
    // Built once attached, so that it takes the width the layout gives it.
    this.plot = new uPlot({
      width: this.width(),
      height: this.height,
      scales: {
        x: { time: true, range: (_u, _min, max) => [max - this.spanMs / 1000, max] },
        y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.15] },
      },
      series: [
        { value: (u, seconds, _si, index) => {
          const at = index === null ? u.data[0][u.data[0].length - 1] : seconds;
          return at == null ? '' : clock(at * 1000);
        } },
        ...this.series.map((s): uPlot.Series => ({
          label: s.label,
          stroke: s.stroke,
          width: s.width ?? 2,
          ...(s.fill ? { fill: s.fill } : {}),
          ...(s.dash ? { dash: s.dash } : {}),
          ...(s.stepped ? { paths: uPlot.paths.stepped?.({ align: 1 }) } : {}),
          value: (u, raw, si, index) => {
            // With the cursor off the chart, the legend reads the latest sample.
            const i = index ?? u.data[0].length - 1;
            const value = index === null ? u.data[si][i] : raw;
            if (i < 0 || value == null) return '—';
            return s.value ? s.value(value, i) : formatCount(value);
          },
        })),
      ],
      axes: [
        { stroke: '#64748b', space: 80, size: 28, values: (_u, splits) => splits.map((seconds) => clock(seconds * 1000)) },
        { stroke: '#64748b', size: 50, space: this.ySpace, incrs: COUNT_STEPS },
      ],
      cursor: { drag: { x: false, y: false } },
    }, data, this.element);
  }

  dispose(): void {
    window.removeEventListener('resize', this.onResize);
    this.plot?.destroy();
  }
}

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

export interface PlotOptions {
  height: number;
  /** The most the x axis spans: the history's length. */
  spanMs: number;
  /** Pixels between the y axis' ticks: less on a short chart, so that it shows more than 0. */
  ySpace?: number;
  /** A y axis of rates (0.02/s) rather than counts: ticks between whole numbers, and a scale that does not start at 1. */
  fractional?: boolean;
}

/** The least the x axis spans, so that the first two samples, a second apart, do not fill a chart edge to edge. */
const MIN_SPAN_S = 5;

/**
 * A uPlot chart over time (Redis-clock times in ms). The x axis spans the samples present, up to the
 * history's length: fresh data fills the chart rather than hugging the right edge of an hour. Its ticks read
 * HH:MM:SS only, so that uPlot's date-and-time labels do not run into each other on a narrow card. Null
 * values are gaps.
 */
export class TimePlot {
  private plot: uPlot | undefined;
  private readonly onResize = () => this.plot?.setSize({ width: this.width(), height: this.options.height });

  constructor(
    readonly element: HTMLElement,
    private readonly series: PlotSeries[],
    private readonly options: PlotOptions,
  ) {
    window.addEventListener('resize', this.onResize);
  }

  private xRange(min: number | null, max: number | null): uPlot.Range.MinMax {
    if (min === null || max === null) return [0, MIN_SPAN_S];
    const from = Math.max(min, max - this.options.spanMs / 1000);
    return [Math.min(from, max - MIN_SPAN_S), max];
  }

  private width(): number {
    // The card's width: a narrow screen gets a narrow chart, not one that spills out of its card.
    return Math.max(200, this.element.clientWidth || 420);
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
    const fractional = this.options.fractional === true;
    this.plot = new uPlot({
      width: this.width(),
      height: this.options.height,
      scales: {
        x: { time: true, range: (_u, min, max) => this.xRange(min, max) },
        y: { range: (_u, _min, max) => [0, Math.max(fractional ? 1e-3 : 1, max ?? 0) * 1.15] },
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
        fractional
          ? { stroke: '#64748b', size: 60, space: this.options.ySpace ?? 30, values: (_u, splits) => splits.map((v) => v.toLocaleString('en-US', { maximumSignificantDigits: 3 })) }
          : { stroke: '#64748b', size: 50, space: this.options.ySpace ?? 30, incrs: COUNT_STEPS },
      ],
      cursor: { drag: { x: false, y: false } },
    }, data, this.element);
  }

  dispose(): void {
    window.removeEventListener('resize', this.onResize);
    this.plot?.destroy();
  }
}

/**
 * How a window is spelled ('250ms', '1s', '1m', '1h', '1d'), with no imports: declarations, the CLI and the
 * dashboard's page (built for the browser) read and write windows the same way.
 */

export const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const WINDOW_PATTERN = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;

/** The ms a window's text spells; undefined for text that spells none (the caller says why it is wrong). */
export function windowTextMs(text: string): number | undefined {
  const match = WINDOW_PATTERN.exec(text);
  return match ? Number(match[1]) * UNIT_MS[match[2]] : undefined;
}

/** The shortest exact spelling of a window, for messages ('1s', '90s', '1500ms'). */
export function formatWindow(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}

/**
 * A duration as people write it, to a tenth of a second under a minute and then in its two largest units:
 * '850ms', '12.3s', '4m 57s', '1m', '3h 5m', '2d 1h'. For messages and the CLI; windows keep formatWindow's
 * exact form.
 */
export function formatDuration(ms: number): string {
  const abs = Math.max(0, ms);
  if (abs < 1000) return `${Math.round(abs)}ms`;
  if (abs < 59_950) return `${Number((abs / 1000).toFixed(1))}s`;
  const s = Math.round(abs / 1000);
  if (s < 3600) return twoUnits(Math.floor(s / 60), 'm', s % 60, 's');
  const min = Math.round(s / 60);
  if (min < 24 * 60) return twoUnits(Math.floor(min / 60), 'h', min % 60, 'm');
  const h = Math.round(min / 60);
  return twoUnits(Math.floor(h / 24), 'd', h % 24, 'h');
}

function twoUnits(big: number, bigUnit: string, small: number, smallUnit: string): string {
  return small === 0 ? `${big}${bigUnit}` : `${big}${bigUnit} ${small}${smallUnit}`;
}

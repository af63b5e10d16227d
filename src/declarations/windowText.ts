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

import cliTruncate from 'cli-truncate';

/** A line cut to `width` terminal columns (cli-truncate counts wide characters and keeps ANSI styles whole), ending in '…' when cut. */
export function fitLine(line: string, width: number): string {
  return cliTruncate(line, Math.max(1, width));
}

/**
 * A frame that fits a terminal: each line cut to `width`, and at most `height` lines. A line that wrapped or a
 * frame that scrolled would leave pieces of the last frame behind when the next one is drawn over it.
 */
export function fitFrame(lines: readonly string[], width: number, height = Infinity): string[] {
  let kept = [...lines];
  if (kept.length > height) {
    const shown = Math.max(0, height - 1);
    kept = [...kept.slice(0, shown), `… ${kept.length - shown} more lines (enlarge the terminal)`];
  }
  return kept.map((line) => fitLine(line, width));
}

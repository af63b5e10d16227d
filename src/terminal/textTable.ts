import Table from 'cli-table3';

export type Align = 'left' | 'right';

// No borders: columns two spaces apart, as plain text that greps and copies cleanly.
const NO_BORDERS = {
  top: '', 'top-mid': '', 'top-left': '', 'top-right': '',
  bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
  left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '',
  middle: '  ',
};

export interface TextTableOptions {
  align?: readonly Align[];
  indent?: string;
}

/**
 * Rows as lines of columns padded to their widest cell (cli-table3 measures what a terminal shows, wide
 * characters included), two spaces apart, trailing spaces trimmed. Short rows are filled with empty cells.
 */
export function textTable(rows: readonly (readonly string[])[], options: TextTableOptions = {}): string[] {
  if (rows.length === 0) return [];
  const columns = Math.max(...rows.map((row) => row.length));
  const table = new Table({
    chars: NO_BORDERS,
    style: { 'padding-left': 0, 'padding-right': 0, head: [], border: [], compact: true },
    colAligns: Array.from({ length: columns }, (_, i) => options.align?.[i] ?? 'left'),
  });
  for (const row of rows) table.push(Array.from({ length: columns }, (_, i) => row[i] ?? ''));
  return table.toString().split('\n').map((line) => `${options.indent ?? ''}${line}`.trimEnd());
}

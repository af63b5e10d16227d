/**
 * Items laid out on as few lines of at most `width` columns as they fit, `separator` between items on a line
 * and never inside one: 'waiting 0 · active 3' breaks between counts, not between a name and its count. The
 * widths are counted in code points, right for the text the views write; an item wider than a line gets a
 * line of its own, and the renderer cuts it (fitFrame measures exactly).
 */
export function wrapItems(items: readonly string[], width: number, separator = ' · ', indent = ''): string[] {
  const lines: string[] = [];
  let line = '';
  for (const item of items.filter((i) => i.length > 0)) {
    if (line === '') line = item;
    else if (columns(`${line}${separator}${item}`) <= width) line = `${line}${separator}${item}`;
    else {
      lines.push(line);
      line = `${indent}${item}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}

/** Words of `text` on lines of at most `width` columns, broken only at spaces. */
export function wrapWords(text: string, width: number, indent = ''): string[] {
  return wrapItems(text.split(/ +/), width, ' ', indent);
}

function columns(text: string): number {
  return [...text].length;
}

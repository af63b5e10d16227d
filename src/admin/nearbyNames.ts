/**
 * The names among `known` that `asked` is probably a typo of (edit distance at most a third of its length, at
 * least 1, or one containing the other), nearest first, at most three: for "did you mean" in errors.
 */
export function nearbyNames(asked: string, known: Iterable<string>): string[] {
  const most = Math.max(1, Math.floor(asked.length / 3));
  const scored: { name: string; distance: number }[] = [];
  for (const name of new Set(known)) {
    if (name === asked) continue;
    const distance = editDistance(asked.toLowerCase(), name.toLowerCase());
    const contains = asked.length >= 3 && (name.includes(asked) || asked.includes(name));
    if (distance <= most || contains) scored.push({ name, distance });
  }
  return scored.sort((a, b) => a.distance - b.distance || a.name.localeCompare(b.name)).slice(0, 3).map((s) => s.name);
}

/** " Did you mean 'stripe'?" / " Declared: a, b." / "": the tail of an unknown-name message. */
export function suggestionText(asked: string, known: readonly string[], what: string): string {
  const near = nearbyNames(asked, known);
  if (near.length > 0) return ` Did you mean ${near.map((n) => `'${n}'`).join(' or ')}?`;
  if (known.length === 0) return ` No ${what} is known there.`;
  const sorted = [...new Set(known)].sort();
  return ` Known ${what}s: ${sorted.slice(0, 10).join(', ')}${sorted.length > 10 ? `, and ${sorted.length - 10} more` : ''}.`;
}

/** Levenshtein distance, with a swap of two neighbours counting once (the commonest typo). */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      rows[i][j] = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) rows[i][j] = Math.min(rows[i][j], rows[i - 2][j - 2] + 1);
    }
  }
  return rows[a.length][b.length];
}

/**
 * Reads one window counter hash as lua/includes/windowCounter.lua writes it: slot k holds
 * count * (slotMs + 1) + offset, its tokens released at (k - 1) * slot + offset ms.
 */
export const SLOTS_PER_WINDOW = 220;

export interface CounterReading {
  /** Tokens still counted at `nowMs`. */
  counted: number;
  /** When one more token fits (ms), or null when one fits now. */
  roomAt: number | null;
}

export function readCounter(hash: Record<string, string>, max: number, windowMs: number, nowMs: number): CounterReading {
  const slotMs = Math.max(1, Math.floor(windowMs / SLOTS_PER_WINDOW));
  const scale = slotMs + 1;
  const live: { releaseMs: number; count: number }[] = [];
  for (const [field, raw] of Object.entries(hash)) {
    const k = Number(field);
    if (!Number.isInteger(k) || field !== String(k)) continue;
    const value = Number(raw);
    const releaseMs = (k - 1) * slotMs + (value % scale);
    const count = Math.floor(value / scale);
    if (releaseMs > nowMs && count > 0) live.push({ releaseMs, count });
  }
  live.sort((a, b) => a.releaseMs - b.releaseMs);
  const counted = live.reduce((n, slot) => n + slot.count, 0);
  const excess = counted - max + 1;
  if (excess <= 0) return { counted, roomAt: null };
  let released = 0;
  for (const slot of live) {
    released += slot.count;
    if (released >= excess) return { counted, roomAt: slot.releaseMs };
  }
  return { counted, roomAt: null };
}

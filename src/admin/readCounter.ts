import { readSlot } from '../grant/windowGeometry';

/**
 * Reads one window counter hash as lua/includes/windowCounter.lua writes it (the slots of src/grant/windowGeometry.ts).
 */
export interface CounterReading {
  /** Tokens still counted at `nowMs`. */
  counted: number;
  /** When one more token fits (ms, rounded up), or null when one fits now. */
  roomAt: number | null;
}

export function readCounter(hash: Record<string, string>, max: number, windowMs: number, nowMs: number): CounterReading {
  const live: { releaseUs: number; count: number }[] = [];
  for (const [field, raw] of Object.entries(hash)) {
    const k = Number(field);
    if (!Number.isInteger(k) || field !== String(k)) continue;
    const { count, releaseUs } = readSlot(windowMs, k, Number(raw));
    if (releaseUs > nowMs * 1000 && count > 0) live.push({ releaseUs, count });
  }
  live.sort((a, b) => a.releaseUs - b.releaseUs);
  const counted = live.reduce((n, slot) => n + slot.count, 0);
  const excess = counted - max + 1;
  if (excess <= 0) return { counted, roomAt: null };
  let released = 0;
  for (const slot of live) {
    released += slot.count;
    if (released >= excess) return { counted, roomAt: Math.ceil(slot.releaseUs / 1000) };
  }
  return { counted, roomAt: null };
}

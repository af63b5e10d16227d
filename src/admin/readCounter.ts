/**
 * Reads one window counter hash as lua/includes/windowCounter.lua writes it: slot k holds
 * count * scale + offset, its tokens released at (k - 1) * slot + offset * step us.
 */
export const SLOTS_PER_WINDOW = 220;
export const STEPS_PER_SLOT = 1000;

/** A window's slot length and offset step (us), and the slot values' scale, as windowCounter.lua's slotGeometry works them out. */
export function slotGeometry(windowMs: number): { slotUs: number; stepUs: number; scale: number } {
  const raw = Math.max(1, Math.floor((windowMs * 1000) / SLOTS_PER_WINDOW));
  const stepUs = Math.ceil(raw / STEPS_PER_SLOT);
  const slotUs = Math.floor(raw / stepUs) * stepUs;
  return { slotUs, stepUs, scale: slotUs / stepUs + 1 };
}

export interface CounterReading {
  /** Tokens still counted at `nowMs`. */
  counted: number;
  /** When one more token fits (ms, rounded up), or null when one fits now. */
  roomAt: number | null;
}

export function readCounter(hash: Record<string, string>, max: number, windowMs: number, nowMs: number): CounterReading {
  const { slotUs, stepUs, scale } = slotGeometry(windowMs);
  const live: { releaseUs: number; count: number }[] = [];
  for (const [field, raw] of Object.entries(hash)) {
    const k = Number(field);
    if (!Number.isInteger(k) || field !== String(k)) continue;
    const value = Number(raw);
    const releaseUs = (k - 1) * slotUs + (value % scale) * stepUs;
    const count = Math.floor(value / scale);
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

/**
 * The slots of a window counter, as lua/includes/windowCounter.lua lays them out: the one TypeScript statement of
 * that geometry, which the admin's reader (src/admin/readCounter.ts), the benchmarks and the tests' reference
 * model share, and which test/windowGeometry.property.test.ts holds to what the Lua writes.
 *
 * A slot is about W / SLOTS_PER_WINDOW long, in whole steps of about a thousandth of a slot (1 us for any W up to
 * 220 ms, 5 us for 1 s). A token granted at g (us) with lease h is released at r = g + W + h; it goes in slot
 * k = ceil(r / slot), whose field holds count * scale + offset, offset being the latest release among its tokens
 * in steps past the slot's start, rounded up.
 */
export const SLOTS_PER_WINDOW = 220;
export const STEPS_PER_SLOT = 1000;

export interface WindowGeometry {
  /** A slot's length in us: a whole number of steps. */
  slotUs: number;
  /** The unit of a release time's offset into its slot, in us. */
  stepUs: number;
  /** A slot field's value is count * scale + offset (offset < scale). */
  scale: number;
}

export function windowGeometry(windowMs: number): WindowGeometry {
  const raw = Math.max(1, Math.floor((windowMs * 1000) / SLOTS_PER_WINDOW));
  const stepUs = Math.ceil(raw / STEPS_PER_SLOT);
  const slotUs = Math.floor(raw / stepUs) * stepUs;
  return { slotUs, stepUs, scale: slotUs / stepUs + 1 };
}

/** Where a token granted at `grantUs` with lease `leaseMs` is counted, and when its slot releases it (at the earliest). */
export function tokenSlot(windowMs: number, grantUs: number, leaseMs: number): { k: number; offset: number; releaseUs: number } {
  const { slotUs, stepUs } = windowGeometry(windowMs);
  const exactUs = grantUs + (windowMs + leaseMs) * 1000;
  const k = Math.ceil(exactUs / slotUs);
  const offset = Math.ceil((exactUs - (k - 1) * slotUs) / stepUs);
  return { k, offset, releaseUs: (k - 1) * slotUs + offset * stepUs };
}

/** A slot field's tokens and the latest release time among them (us). */
export function readSlot(windowMs: number, k: number, value: number): { count: number; releaseUs: number } {
  const { slotUs, stepUs, scale } = windowGeometry(windowMs);
  return { count: Math.floor(value / scale), releaseUs: (k - 1) * slotUs + (value % scale) * stepUs };
}

import type { Redis } from 'ioredis';
import { SLOTS_PER_WINDOW, windowGeometry } from '../../src/grant/windowGeometry';

/** The counter's slot and offset step in us, and its scale (test/windowGeometry.property.test.ts holds them to the Lua's). */
export function slotGeometryUs(windowMs: number): { slotUs: number; stepUs: number; scale: number } {
  return windowGeometry(windowMs);
}

/**
 * The most release indices a counter can hold at once (lease 0): those in (floor(now/slot), ceil((now+W)/slot)],
 * at most ceil(W/slot) + 1 of them, and never more than N since each holds at least one token.
 */
export function mostReleaseIndices(max: number, windowMs: number): number {
  return Math.min(max, Math.ceil((windowMs * 1000) / slotGeometryUs(windowMs).slotUs) + 1);
}

/** A counter's header field h as windowCounter.lua's saveCounter writes it: "n lo hi x". */
export function counterHeader(n: number, lo: number, hi: number, expirySlot: number): string {
  return `${n} ${lo} ${hi} ${expirySlot}`;
}

/**
 * Writes, with HSET, the largest hash windowCounter.lua can leave for N per W: its header and the most
 * release indices, N tokens shared among them, each slot's value as wide as it can be. Resolves to the number of release-index fields.
 */
export async function constructWorstCaseCounter(redis: Redis, key: string, max: number, windowMs: number): Promise<number> {
  const [seconds, micros] = await redis.time();
  const { slotUs, scale } = slotGeometryUs(windowMs);
  const due = Math.floor((Number(seconds) * 1_000_000 + Number(micros)) / slotUs);
  const indices = mostReleaseIndices(max, windowMs);
  const fields: (string | number)[] = ['h', counterHeader(max, due + 1, due + indices, due + indices + Math.floor(SLOTS_PER_WINDOW / 4))];
  for (let i = 0; i < indices; i++) {
    const count = Math.floor(((i + 1) * max) / indices) - Math.floor((i * max) / indices);
    // Stored as count * scale + the slot's latest release offset (steps): the widest value.
    fields.push(due + 1 + i, count * scale + scale - 1);
  }
  await redis.hset(key, ...fields);
  await redis.pexpire(key, windowMs + Math.ceil(slotUs / 1000));
  return indices;
}

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { LUA_DIR } from '../../src/lua/luaBundler';

/** SLOTS_PER_WINDOW as lua/includes/windowCounter.lua defines it, read from there so the two never disagree. */
export function slotsPerWindow(): number {
  const source = readFileSync(join(LUA_DIR, 'includes', 'windowCounter.lua'), 'utf8');
  const match = /SLOTS_PER_WINDOW\s*=\s*(\d+)/.exec(source);
  if (!match) throw new Error('lua/includes/windowCounter.lua no longer defines SLOTS_PER_WINDOW');
  return Number(match[1]);
}

/** The counter's slot in ms, as slotUsFor() computes it. */
export function slotMs(windowMs: number): number {
  return Math.max(1, Math.floor(windowMs / slotsPerWindow()));
}

/**
 * The most release indices a counter can hold at once (lease 0): those in (floor(now/slot), ceil((now+W)/slot)],
 * at most ceil(W/slot) + 1 of them, and never more than N since each holds at least one token.
 */
export function mostReleaseIndices(max: number, windowMs: number): number {
  return Math.min(max, Math.ceil(windowMs / slotMs(windowMs)) + 1);
}

/**
 * Writes, with HSET, the largest hash windowCounter.lua can leave for N per W: n, lo, hi and the most
 * release indices, N tokens shared among them, each slot's value as wide as it can be. Resolves to the number of release-index fields.
 */
export async function constructWorstCaseCounter(redis: Redis, key: string, max: number, windowMs: number): Promise<number> {
  const [seconds, micros] = await redis.time();
  const slot = slotMs(windowMs);
  const due = Math.floor((Number(seconds) * 1000 + Number(micros) / 1000) / slot);
  const indices = mostReleaseIndices(max, windowMs);
  const fields: (string | number)[] = ['n', max, 'lo', due + 1, 'hi', due + indices];
  for (let i = 0; i < indices; i++) {
    const count = Math.floor(((i + 1) * max) / indices) - Math.floor((i * max) / indices);
    // Stored as count * scale + the slot's latest release offset (ms), scale = slot + 1: the widest value.
    fields.push(due + 1 + i, count * (slot + 1) + slot);
  }
  await redis.hset(key, ...fields);
  await redis.pexpire(key, windowMs + slot);
  return indices;
}

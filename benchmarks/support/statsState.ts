import type { Redis } from 'ioredis';
import { encodeBucket } from '../../src/keys/keyEncoding';
import { ThrottleKeys } from '../../src/keys/ThrottleKeys';
import { counterHeader, slotGeometryUs } from './worstCaseCounter';

/**
 * Writes, with pipelined ZADD/HSET, the state the delivery script keeps for a keyed throttle, exactly in
 * the format lua/includes/throttleStats.lua and lua/includes/windowCounter.lua write it (see docs/keys.md),
 * without delivering anything: populating a million buckets through real deliveries would take far too long.
 */

/** A small deterministic PRNG (mulberry32), so that every run constructs the same state. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The Redis clock in ms, as the scripts read it. */
export async function redisNowMs(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** The bucket segment of customer i: its key value is the string `c<i>`, so the segment is `sc<i>`. */
export function customerKey(i: number): string {
  return `c${i}`;
}

export interface StatsStateOptions {
  /** The queue whose worker declares the throttle: held and delivered counts are kept per queue. */
  queue: string;
  /** Throttle name, window and N of its one limit. */
  name: string;
  windowMs: number;
  max: number;
  buckets: number;
  /** Every `fullEvery`-th bucket is at its limit (10: ~10%), every `waitingEvery`-th has held jobs (100: ~1%). */
  fullEvery: number;
  waitingEvery: number;
  /** Buckets 0..counters-1 also get a real window counter hash, with `tokensPerCounter` tokens. */
  counters: number;
  tokensPerCounter: number;
  /** Members per ZADD/HSET and commands per pipeline. */
  chunk?: number;
  perPipeline?: number;
  seed?: number;
}

export interface StatsState {
  nowMs: number;
  active: number;
  full: number;
  waitingBuckets: number;
  waitingJobs: number;
  /** The bucket with the most held jobs (placed on purpose) and its count: what topBuckets[0] must be. */
  top: { key: string; waiting: number };
  delivered: number;
  /** Deliveries in the :recent slots inside the window ending at `atMs`: what lastWindow[0].delivered must be then. */
  recentInWindow(atMs: number): number;
  /** Per counter bucket, the tokens counted now: what throttleBucket(...).limits[0].counted must be. */
  counted: Map<string, number>;
}

/** Sends `commands` (each one argument list) in pipelines of `perPipeline`, throwing the first error. */
async function sendAll(redis: Redis, commands: (string | number)[][], perPipeline: number): Promise<void> {
  for (let i = 0; i < commands.length; i += perPipeline) {
    const pipeline = redis.pipeline();
    for (const [command, ...args] of commands.slice(i, i + perPipeline)) pipeline.call(String(command), ...args);
    for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
  }
}

/**
 * One window counter hash as windowCounter.lua's saveCounter leaves it after granting a token at each of
 * `grantsMs` (lease 0): slot k = ceil(release / slot) holds count * scale + the latest release offset in
 * the slot (in steps); the header h is "n lo hi x", with x = hi (the slot the expiry was set for). Returns
 * the fields and the expiry (ms), which is also the bucket's :active score.
 */
export function counterFields(grantsMs: readonly number[], windowMs: number): { fields: (string | number)[]; expiresAtMs: number; earliestSlotStartMs: number } {
  const { slotUs, stepUs, scale } = slotGeometryUs(windowMs);
  const slots = new Map<number, { count: number; offset: number }>();
  for (const grant of grantsMs) {
    const releaseUs = (grant + windowMs) * 1000;
    const k = Math.ceil(releaseUs / slotUs);
    const offset = Math.ceil((releaseUs - (k - 1) * slotUs) / stepUs);
    const known = slots.get(k);
    if (known) {
      known.count++;
      known.offset = Math.max(known.offset, offset);
    } else {
      slots.set(k, { count: 1, offset });
    }
  }
  const ks = [...slots.keys()];
  const lo = Math.min(...ks);
  const hi = Math.max(...ks);
  const fields: (string | number)[] = ['h', counterHeader(grantsMs.length, lo, hi, hi)];
  for (const [k, { count, offset }] of slots) fields.push(k, count * scale + offset);
  return { fields, expiresAtMs: Math.ceil((hi * slotUs) / 1000), earliestSlotStartMs: Math.floor(((lo - 1) * slotUs) / 1000) };
}

export async function constructStatsState(redis: Redis, keys: ThrottleKeys, options: StatsStateOptions): Promise<StatsState> {
  const { name, windowMs, buckets, fullEvery, waitingEvery } = options;
  const chunk = options.chunk ?? 1000;
  const perPipeline = options.perPipeline ?? 50;
  const random = prng(options.seed ?? 1);
  // The bucket indexes live with the counters; what is held and delivered, with the queue that declares it.
  const k = { ...keys.throttleIndexes(name), ...keys.queue(options.queue).throttleStats(name) };
  const nowMs = await redisNowMs(redis);
  // Scores at least two minutes ahead (room: one), so that every constructed bucket still counts while the run lasts.
  const ahead = (): number => nowMs + 120_000 + Math.floor(random() * (windowMs - 120_000));

  // A few real counters first: their :active score must be their expiry, as saveCounter writes it, and
  // those of buckets marked full hold N tokens, with :full at their earliest slot's start (saveCounter's).
  const counted = new Map<string, number>();
  const counterExpiry = new Map<number, number>();
  const counterRoom = new Map<number, number>();
  const commands: (string | number)[][] = [];
  for (let i = 0; i < options.counters; i++) {
    // Tokens granted over the last window (but its first and last minute): all still counted now.
    const tokens = i % fullEvery === 0 ? options.max : options.tokensPerCounter;
    const grants = Array.from({ length: tokens }, () => nowMs - 60_000 - Math.floor(random() * (windowMs - 120_000)));
    const bucket = encodeBucket([customerKey(i)], name);
    const key = keys.windowCounter(name, bucket, windowMs);
    const { fields, expiresAtMs, earliestSlotStartMs } = counterFields(grants, windowMs);
    commands.push(['HSET', key, ...fields], ['PEXPIREAT', key, expiresAtMs]);
    counted.set(customerKey(i), grants.length);
    counterExpiry.set(i, expiresAtMs);
    counterRoom.set(i, earliestSlotStartMs);
  }

  // :active (every bucket), :full (~1 in fullEvery), :waiting (~1 in waitingEvery, holding jobs).
  let full = 0;
  let waitingBuckets = 0;
  let waitingJobs = 0;
  const topIndex = waitingEvery * Math.floor(buckets / waitingEvery / 2);
  const top = { key: customerKey(topIndex), waiting: 1000 };
  for (let from = 0; from < buckets; from += chunk) {
    const active: (string | number)[] = [];
    const fullArgs: (string | number)[] = [];
    const waiting: (string | number)[] = [];
    for (let i = from; i < Math.min(buckets, from + chunk); i++) {
      const member = encodeBucket([customerKey(i)], name);
      const lastRelease = counterExpiry.get(i) ?? ahead();
      active.push(lastRelease, member);
      if (i % fullEvery === 0) {
        // Room returns no later than the last token's release.
        fullArgs.push(counterRoom.get(i) ?? nowMs + 60_000 + Math.floor(random() * (lastRelease - nowMs - 60_000)), member);
        full++;
      }
      if (i % waitingEvery === 0) {
        const jobs = i === topIndex ? top.waiting : 1 + Math.floor(random() * 100);
        waiting.push(jobs, member);
        waitingBuckets++;
        waitingJobs += jobs;
      }
    }
    commands.push(['ZADD', k.active, ...active]);
    if (fullArgs.length > 0) commands.push(['ZADD', k.full, ...fullArgs]);
    if (waiting.length > 0) commands.push(['ZADD', k.waiting, ...waiting]);
  }

  // :recent: one field per W/60 slot of the longest window, the latest 60 of them, plus older ones
  // outside the window (as left between sweeps); the hash lapses like the script's.
  const recentSlotMs = Math.max(1, Math.floor(windowMs / 60));
  const nowSlot = Math.floor(nowMs / recentSlotMs);
  const recent: (string | number)[] = [];
  const recentSlots: [number, number][] = [];
  for (let slot = nowSlot - 70; slot <= nowSlot; slot++) {
    const deliveries = 1 + Math.floor(random() * 500);
    recent.push(slot, deliveries);
    recentSlots.push([slot, deliveries]);
  }
  // As ThrottleAdmin counts them: slots that end inside the window.
  const recentInWindow = (atMs: number): number =>
    recentSlots.reduce((sum, [slot, deliveries]) => sum + ((slot + 1) * recentSlotMs > atMs - windowMs ? deliveries : 0), 0);
  commands.push(['HSET', k.recent, ...recent], ['PEXPIRE', k.recent, 2 * windowMs + recentSlotMs]);

  const delivered = 3 * buckets;
  commands.push(['HSET', k.stats, 'delivered', delivered, 'limited', waitingJobs, 'waiting', waitingJobs]);
  await sendAll(redis, commands, perPipeline);
  return { nowMs, active: buckets, full, waitingBuckets, waitingJobs, top, delivered, recentInWindow, counted };
}

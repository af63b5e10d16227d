import { tokenSlot, windowGeometry } from '../../src/grant/windowGeometry';

/**
 * A reference model of the window counters in plain TypeScript, as small as it can be: each counter maps a
 * slot to its token count and the latest release time among them. The property test holds the Lua
 * scripts to it decision by decision.
 */
// The slots are the package's own (src/grant/windowGeometry.ts), which a property test holds to the Lua's.
export function slotUs(windowMs: number): number {
  return windowGeometry(windowMs).slotUs;
}

/** A token's slot, and the slot's release time once the token is in it (at least the token's own). */
export function slotOf(windowMs: number, grantUs: number, leaseMs: number): { k: number; releaseUs: number } {
  const { k, releaseUs } = tokenSlot(windowMs, grantUs, leaseMs);
  return { k, releaseUs };
}

export interface ModelCounterRef {
  key: string;
  max: number;
  windowMs: number;
  /** Tokens the delivery takes from this counter (1 unless given). */
  cost?: number;
}

interface Slot { count: number; releaseUs: number }

export class ReferenceModel {
  private readonly counters = new Map<string, Map<number, Slot>>();
  private readonly returned = new Map<string, Map<string, number>>();

  constructor(private readonly leaseMs: number) {}

  private live(key: string, nowUs: number): [number, Slot][] {
    const counter = this.counters.get(key) ?? new Map<number, Slot>();
    this.counters.set(key, counter);
    for (const [k, slot] of counter) if (slot.releaseUs <= nowUs || slot.count === 0) counter.delete(k);
    return [...counter].sort(([a], [b]) => a - b);
  }

  counted(key: string, nowUs: number): number {
    return this.live(key, nowUs).reduce((n, [, slot]) => n + slot.count, 0);
  }

  private roomAtUs(ref: ModelCounterRef, nowUs: number): number {
    const excess = this.counted(ref.key, nowUs) - ref.max + (ref.cost ?? 1);
    if (excess <= 0) return 0;
    let released = 0;
    for (const [, slot] of this.live(ref.key, nowUs)) {
      released += slot.count;
      if (released >= excess) return slot.releaseUs;
    }
    throw new Error('unreachable: a full counter always frees up');
  }

  /** 0 for granted, else retryAt in ms: the same reply as grantDeliveries. */
  grant(nowUs: number, deliveries: ModelCounterRef[][]): number[] {
    return deliveries.map((refs) => {
      if (refs.every((ref) => this.counted(ref.key, nowUs) + (ref.cost ?? 1) <= ref.max)) {
        for (const ref of refs) {
          const { k, releaseUs } = slotOf(ref.windowMs, nowUs, this.leaseMs);
          const counter = this.counters.get(ref.key)!;
          const slot = counter.get(k) ?? { count: 0, releaseUs };
          counter.set(k, { count: slot.count + (ref.cost ?? 1), releaseUs: Math.max(slot.releaseUs, releaseUs) });
        }
        return 0;
      }
      const retryUs = Math.max(nowUs, ...refs.map((ref) => this.roomAtUs(ref, nowUs)));
      return Math.ceil(retryUs / 1000);
    });
  }

  /** 1 when some of the token's counts in this throttle stopped now, 0 when returned before or no longer counted. */
  returnToken(nowUs: number, setKey: string, nonce: string, grantUs: number, leaseMs: number, refs: { key: string; windowMs: number }[], count = 1): number {
    const nowMs = Math.floor(nowUs / 1000);
    const set = this.returned.get(setKey) ?? new Map<string, number>();
    this.returned.set(setKey, set);
    for (const [member, expiry] of set) if (expiry <= nowMs) set.delete(member);
    const matters = Math.max(...refs.map((ref) => Math.ceil((slotOf(ref.windowMs, grantUs, leaseMs).k * slotUs(ref.windowMs)) / 1000)));
    if (matters <= nowMs || set.has(nonce)) return 0;
    set.set(nonce, matters);
    let returned = 0;
    for (const ref of refs) {
      const { k } = slotOf(ref.windowMs, grantUs, leaseMs);
      const slot = new Map(this.live(ref.key, nowUs)).get(k);
      if (slot && slot.count > 0) {
        slot.count -= Math.min(count, slot.count);
        returned = 1;
      }
    }
    return returned;
  }
}

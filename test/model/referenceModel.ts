/**
 * A reference model of the window counters in plain TypeScript, as small as it can be: each counter is a map
 * from release index to tokens. The property test holds the Lua scripts to it decision by decision.
 */
export const SLOTS_PER_WINDOW = 110;

export function slotUs(windowMs: number): number {
  return Math.max(1, Math.floor(windowMs / SLOTS_PER_WINDOW)) * 1000;
}

export function releaseIndex(windowMs: number, grantUs: number, leaseMs: number): number {
  return Math.ceil((grantUs + (windowMs + leaseMs) * 1000) / slotUs(windowMs));
}

export interface ModelCounterRef {
  key: string;
  max: number;
  windowMs: number;
}

export class ReferenceModel {
  private readonly counters = new Map<string, Map<number, number>>();
  private readonly returned = new Map<string, Map<string, number>>();

  constructor(private readonly leaseMs: number) {}

  private counter(key: string): Map<number, number> {
    let counter = this.counters.get(key);
    if (!counter) this.counters.set(key, (counter = new Map()));
    return counter;
  }

  counted(ref: ModelCounterRef, nowUs: number): number {
    let n = 0;
    for (const [k, c] of this.counter(ref.key)) if (k * slotUs(ref.windowMs) > nowUs) n += c;
    return n;
  }

  private roomAtUs(ref: ModelCounterRef, nowUs: number): number {
    const excess = this.counted(ref, nowUs) - ref.max + 1;
    if (excess <= 0) return 0;
    const live = [...this.counter(ref.key)].filter(([k]) => k * slotUs(ref.windowMs) > nowUs).sort(([a], [b]) => a - b);
    let released = 0;
    for (const [k, c] of live) {
      released += c;
      if (released >= excess) return k * slotUs(ref.windowMs);
    }
    throw new Error('unreachable: a full counter always frees up');
  }

  /** 0 for granted, else retryAt in ms: the same reply as grantDeliveries. */
  grant(nowUs: number, deliveries: ModelCounterRef[][]): number[] {
    return deliveries.map((refs) => {
      if (refs.every((ref) => this.counted(ref, nowUs) < ref.max)) {
        for (const ref of refs) {
          const k = releaseIndex(ref.windowMs, nowUs, this.leaseMs);
          const counter = this.counter(ref.key);
          counter.set(k, (counter.get(k) ?? 0) + 1);
        }
        return 0;
      }
      const retryUs = Math.max(nowUs, ...refs.map((ref) => this.roomAtUs(ref, nowUs)));
      return Math.ceil(retryUs / 1000);
    });
  }

  /** 1 when the token's counts in this throttle stopped now, 0 when returned before or no longer counted. */
  returnToken(nowUs: number, setKey: string, nonce: string, grantUs: number, leaseMs: number, refs: { key: string; windowMs: number }[]): number {
    const nowMs = Math.floor(nowUs / 1000);
    let set = this.returned.get(setKey);
    if (!set) this.returned.set(setKey, (set = new Map()));
    for (const [member, expiry] of set) if (expiry <= nowMs) set.delete(member);
    const matters = Math.max(...refs.map((ref) => Math.ceil((releaseIndex(ref.windowMs, grantUs, leaseMs) * slotUs(ref.windowMs)) / 1000)));
    if (matters <= nowMs || set.has(nonce)) return 0;
    set.set(nonce, matters);
    for (const ref of refs) {
      const k = releaseIndex(ref.windowMs, grantUs, leaseMs);
      const counter = this.counter(ref.key);
      const c = counter.get(k) ?? 0;
      if (k * slotUs(ref.windowMs) > nowUs && c > 0) {
        if (c === 1) counter.delete(k); else counter.set(k, c - 1);
      }
    }
    return 1;
  }
}

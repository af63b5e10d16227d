import type { WireHistory, WireSeries, WireThrottle } from '../wire';

/** One limit's ring of samples. */
class Ring {
  private readonly t: number[] = [];
  private readonly delivered: number[] = [];
  private readonly max: number[] = [];

  constructor(private readonly capacity: number) {}

  push(at: number, delivered: number, max: number): void {
    // A read answered late can come after a newer one: time must only go forward on a chart.
    if (this.t.length > 0 && at <= this.t[this.t.length - 1]) return;
    this.t.push(at);
    this.delivered.push(delivered);
    this.max.push(max);
    if (this.t.length > this.capacity) {
      this.t.shift();
      this.delivered.shift();
      this.max.shift();
    }
  }

  get lastAt(): number {
    return this.t.length > 0 ? this.t[this.t.length - 1] : -Infinity;
  }

  series(): WireSeries {
    return { t: [...this.t], delivered: [...this.delivered], max: [...this.max] };
  }
}

/**
 * What each throttle's `lastWindow` said, sample by sample, per limit: the charts' history. It is kept
 * in memory, from the statistics the delivery scripts keep (no bucket is read), so it starts when the
 * dashboard starts. A throttle or a limit that stops being reported is forgotten once its samples are all
 * older than the ring holds.
 */
export class DeliveryHistory {
  private readonly rings = new Map<string, Map<string, Ring>>();

  constructor(
    /** Samples kept per limit. */
    private readonly capacity: number,
    private readonly sampleEveryMs: number,
  ) {}

  record(throttles: readonly WireThrottle[]): void {
    let newest = -Infinity;
    for (const throttle of throttles) {
      let limits = this.rings.get(throttle.name);
      if (!limits) {
        limits = new Map();
        this.rings.set(throttle.name, limits);
      }
      for (const window of throttle.lastWindow) {
        const id = String(window.windowMs);
        let ring = limits.get(id);
        if (!ring) {
          ring = new Ring(this.capacity);
          limits.set(id, ring);
        }
        ring.push(throttle.at, window.delivered, window.max);
      }
      newest = Math.max(newest, throttle.at);
    }
    if (newest > -Infinity) this.forgetOlderThan(newest - this.capacity * this.sampleEveryMs);
  }

  private forgetOlderThan(cutoff: number): void {
    for (const [name, limits] of this.rings) {
      for (const [id, ring] of limits) if (ring.lastAt < cutoff) limits.delete(id);
      if (limits.size === 0) this.rings.delete(name);
    }
  }

  snapshot(): WireHistory {
    const out: WireHistory = {};
    for (const [name, limits] of this.rings) {
      out[name] = {};
      for (const [id, ring] of limits) out[name][id] = ring.series();
    }
    return out;
  }
}

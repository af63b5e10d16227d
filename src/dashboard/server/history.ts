import { emptySeries, limitSamples, pushSample } from '../series';
import type { WireBusiest, WireHistory, WireSeries, WireThrottle } from '../wire';

/**
 * What each sample found per throttle and limit: the busiest bucket's count against N, and the deliveries of all
 * buckets together (the charts' history). It is kept in memory, from reads whose cost does not grow with the
 * number of buckets, so it starts when the dashboard starts. A throttle or a limit that stops being reported is
 * forgotten once its samples are all older than the ring holds.
 */
export class DeliveryHistory {
  private readonly rings = new Map<string, Map<string, WireSeries>>();

  constructor(
    /** Samples kept per limit. */
    private readonly capacity: number,
    private readonly sampleEveryMs: number,
  ) {}

  record(reading: { throttles: readonly WireThrottle[]; busiest: Readonly<Record<string, WireBusiest[]>> }): void {
    let newest = -Infinity;
    for (const throttle of reading.throttles) {
      let limits = this.rings.get(throttle.name);
      if (!limits) {
        limits = new Map();
        this.rings.set(throttle.name, limits);
      }
      for (const sample of limitSamples(throttle, reading.busiest[throttle.name])) {
        const id = String(sample.windowMs);
        let ring = limits.get(id);
        if (!ring) {
          ring = emptySeries();
          limits.set(id, ring);
        }
        pushSample(ring, throttle.at, sample, this.capacity);
      }
      newest = Math.max(newest, throttle.at);
    }
    if (newest > -Infinity) this.forgetOlderThan(newest - this.capacity * this.sampleEveryMs);
  }

  private forgetOlderThan(cutoff: number): void {
    for (const [name, limits] of this.rings) {
      for (const [id, ring] of limits) if (ring.t.length === 0 || ring.t[ring.t.length - 1] < cutoff) limits.delete(id);
      if (limits.size === 0) this.rings.delete(name);
    }
  }

  snapshot(): WireHistory {
    const out: WireHistory = {};
    for (const [name, limits] of this.rings) {
      out[name] = {};
      for (const [id, ring] of limits) out[name][id] = structuredClone(ring);
    }
    return out;
  }
}

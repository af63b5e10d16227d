import { emptyFlowSeries, FlowSample, flowSample, pushFlowSample } from '../flowSeries';
import { emptySeries, LimitSample, limitSamples, pushSample } from '../series';
import type { WireBusiest, WireFlowHistory, WireFlowSeries, WireHistory, WireSeries, WireThrottle } from '../wire';

/** What one sample found of one throttle: per limit, and its flow. */
export interface ThrottleSample {
  name: string;
  /** Redis time of the throttle's read (ms). */
  at: number;
  limits: LimitSample[];
  flow: FlowSample;
}

/** One sample of every throttle: what the history records, and what historyStore.ts keeps in Redis. */
export type HistorySample = ThrottleSample[];

export function historySample(reading: { throttles: readonly WireThrottle[]; busiest: Readonly<Record<string, WireBusiest[]>> }): HistorySample {
  return reading.throttles.map((throttle) => ({
    name: throttle.name,
    at: throttle.at,
    limits: limitSamples(throttle, reading.busiest[throttle.name]),
    flow: flowSample(throttle),
  }));
}

interface ThrottleRings {
  limits: Map<string, WireSeries>;
  flow: WireFlowSeries;
}

/**
 * What each sample found per throttle and limit (the busiest bucket's count against N, the deliveries of all
 * buckets together) and per throttle (its flow): the charts' history, in rings of `capacity` samples. Seeded
 * from Redis when the dashboard starts (historyStore.ts), so it outlives a restart. A throttle or a limit that
 * stops being reported is forgotten once its samples are all older than the ring holds.
 */
export class DeliveryHistory {
  private readonly rings = new Map<string, ThrottleRings>();

  constructor(
    /** Samples kept per limit. */
    private readonly capacity: number,
    private readonly sampleEveryMs: number,
  ) {}

  record(sample: HistorySample): void {
    let newest = -Infinity;
    for (const throttle of sample) {
      let rings = this.rings.get(throttle.name);
      if (!rings) {
        rings = { limits: new Map(), flow: emptyFlowSeries() };
        this.rings.set(throttle.name, rings);
      }
      const last = rings.flow.t[rings.flow.t.length - 1];
      // Two dashboards of one namespace both write samples to Redis: read back, theirs interleave with ours.
      if (last !== undefined && throttle.at - last < this.sampleEveryMs / 2) continue;
      for (const limit of throttle.limits) {
        const id = String(limit.windowMs);
        let ring = rings.limits.get(id);
        if (!ring) {
          ring = emptySeries();
          rings.limits.set(id, ring);
        }
        pushSample(ring, throttle.at, limit, this.capacity);
      }
      pushFlowSample(rings.flow, throttle.at, throttle.flow, this.capacity);
      newest = Math.max(newest, throttle.at);
    }
    if (newest > -Infinity) this.forgetOlderThan(newest - this.capacity * this.sampleEveryMs);
  }

  private forgetOlderThan(cutoff: number): void {
    const stale = (series: { t: number[] }) => series.t.length === 0 || series.t[series.t.length - 1] < cutoff;
    for (const [name, rings] of this.rings) {
      for (const [id, ring] of rings.limits) if (stale(ring)) rings.limits.delete(id);
      if (stale(rings.flow)) this.rings.delete(name);
    }
  }

  snapshot(): { history: WireHistory; flowHistory: WireFlowHistory } {
    const history: WireHistory = {};
    const flowHistory: WireFlowHistory = {};
    for (const [name, rings] of this.rings) {
      history[name] = {};
      for (const [id, ring] of rings.limits) history[name][id] = structuredClone(ring);
      flowHistory[name] = structuredClone(rings.flow);
    }
    return { history, flowHistory };
  }
}

import { PublishedAdaptive } from '../../src/declarations/Adaptive';

/**
 * lua/includes/adaptiveLimit.lua in TypeScript, for one bucket: the live limit its latest decrease set (and when),
 * raised by `increase` each whole period since, between min and the ceiling; a decrease multiplies the live limit
 * (rounded down, at least min) at most once a period. The scripts must agree with it decision by decision.
 */
export class AdaptiveModel {
  private lowered?: { live: number; sinceMs: number; keptUntilMs: number };

  constructor(private readonly spec: PublishedAdaptive) {}

  live(nowMs: number): number {
    const { spec } = this;
    if (!this.lowered || nowMs >= this.lowered.keptUntilMs) return spec.ceiling;
    const steps = Math.floor(Math.max(0, nowMs - this.lowered.sinceMs) / spec.periodMs);
    return Math.max(spec.min, Math.min(spec.ceiling, this.lowered.live + spec.increase * steps));
  }

  /** When it was last lowered, while it is below its ceiling; 0 otherwise. */
  loweredAt(nowMs: number): number {
    return this.lowered && this.live(nowMs) < this.spec.ceiling ? this.lowered.sinceMs : 0;
  }

  lower(nowMs: number): { before: number; after: number; changed: boolean } {
    const { spec } = this;
    const before = this.live(nowMs);
    if (this.lowered && nowMs < this.lowered.keptUntilMs && nowMs - this.lowered.sinceMs < spec.periodMs) return { before, after: before, changed: false };
    const after = Math.max(spec.min, Math.floor(before * spec.decrease));
    const keptMs = (Math.ceil((spec.ceiling - after) / spec.increase) + 1) * spec.periodMs;
    this.lowered = { live: after, sinceMs: nowMs, keptUntilMs: nowMs + keptMs };
    return { before, after, changed: true };
  }
}

import { Rate } from '../../src/declarations/Rate';

/**
 * The generic cell rate of lua/includes/rateCounter.lua, in TypeScript: one theoretical arrival time (TAT, us)
 * per bucket; one delivery's c tokens (its cost, spent together) fit at now when TAT + (c - 1) * T - tau <= now,
 * with T = per / n and tau = (burst - 1) * T - leaseMs, checked against the stored TAT (never clamped to now:
 * rateCounter.lua says why that holds); their grant moves TAT to max(TAT, now) + c * T. The scripts must
 * decide exactly as this does. A token given back stays counted (lua/includes/rateCounter.lua says why):
 * nothing here takes one off.
 */
export class RateModel {
  private readonly tat = new Map<string, number>();

  constructor(private readonly leaseMs: number) {}

  private shape(rate: Rate): { T: number; tolerance: number } {
    const T = (rate.perMs * 1000) / rate.n;
    return { T, tolerance: (rate.burst - 1) * T - this.leaseMs * 1000 };
  }

  /** Room for `cost` more at nowUs, or when it returns (us). */
  roomAtUs(key: string, rate: Rate, nowUs: number, cost = 1): number {
    const { T, tolerance } = this.shape(rate);
    const at = (this.tat.get(key) ?? 0) + (cost - 1) * T - tolerance;
    return at <= nowUs ? 0 : Math.ceil(at);
  }

  fits(key: string, rate: Rate, nowUs: number, cost = 1): boolean {
    return this.roomAtUs(key, rate, nowUs, cost) === 0;
  }

  take(key: string, rate: Rate, nowUs: number, cost = 1): void {
    const { T } = this.shape(rate);
    this.tat.set(key, Math.ceil(Math.max(this.tat.get(key) ?? 0, nowUs) + cost * T));
  }

  /**
   * Until when (ms) the bucket's TAT is kept: every delivery of cost up to the burst fits by the TAT from TAT + H
   * on, so it may be forgotten then, and not before. -2 (no key) for a bucket never granted.
   */
  keptUntilMs(key: string): number {
    const tat = this.tat.get(key);
    return tat === undefined ? -2 : Math.ceil((tat + this.leaseMs * 1000) / 1000);
  }

  tatUs(key: string): number {
    return this.tat.get(key) ?? 0;
  }

  /** Until when (ms) a return of a token granted at grantUs still gives it back (lua/returnTokens-n.lua). */
  returnMattersMs(rate: Rate, grantUs: number): number {
    return Math.ceil(grantUs / 1000) + Math.ceil((rate.burst * ((rate.perMs * 1000) / rate.n)) / 1000) + this.leaseMs;
  }

}

/**
 * The most tokens among `timesUs` (sorted or not) that a rate lets go: for every run of them, its count less
 * what burst + n * t / per allows over the run's span t. Positive: the rate was exceeded.
 */
export function worstRateExcess(timesUs: readonly number[], rate: Rate): number {
  const sorted = [...timesUs].sort((a, b) => a - b);
  const T = (rate.perMs * 1000) / rate.n;
  let worst = -Infinity;
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i; j < sorted.length; j++) {
      worst = Math.max(worst, j - i + 1 - (rate.burst + (sorted[j] - sorted[i]) / T));
    }
  }
  return worst;
}

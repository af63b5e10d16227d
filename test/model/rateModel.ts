import { Rate } from '../../src/declarations/Rate';

/**
 * The generic cell rate of lua/includes/rateCounter.lua, in TypeScript: one theoretical arrival time (TAT, us)
 * per bucket; a token fits at now when max(TAT, now) + T - now <= tau + T, with T = per / n and
 * tau = (burst - 1) * T - leaseMs, or TAT - now <= tau when tau < 0 (a lease the burst does not cover). The
 * scripts must decide exactly as this does. A token given back stays
 * counted (lua/includes/rateCounter.lua says why): nothing here takes one off.
 */
export class RateModel {
  private readonly tat = new Map<string, number>();

  constructor(private readonly leaseMs: number) {}

  private shape(rate: Rate): { T: number; tolerance: number } {
    const T = (rate.perMs * 1000) / rate.n;
    return { T, tolerance: (rate.burst - 1) * T - this.leaseMs * 1000 };
  }

  /** Room for one more at nowUs, or when it returns (us). */
  roomAtUs(key: string, rate: Rate, nowUs: number): number {
    const { tolerance } = this.shape(rate);
    const tat = this.tat.get(key) ?? 0;
    const at = (tolerance < 0 ? tat : Math.max(tat, nowUs)) - tolerance;
    return at <= nowUs ? 0 : Math.ceil(at);
  }

  fits(key: string, rate: Rate, nowUs: number): boolean {
    return this.roomAtUs(key, rate, nowUs) === 0;
  }

  take(key: string, rate: Rate, nowUs: number): void {
    const { T } = this.shape(rate);
    this.tat.set(key, Math.ceil(Math.max(this.tat.get(key) ?? 0, nowUs) + T));
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

import { Rate } from '../declarations/Rate';

/** A bucket's rate as lua/includes/rateCounter.lua counts it. */
export interface RateReading {
  /** The rate's n: deliveries (cost units, with a cost) on average per `perMs`. */
  n: number;
  /** The period `n` is counted over (ms). */
  perMs: number;
  /** The most deliveries (cost units, with a cost) an idle bucket lets go at once. */
  burst: number;
  /** Deliveries the rate would let go at once now. */
  room: number;
  /** When room for one more returns (ms, Redis clock); null when there is room now. */
  roomAt: number | null;
}

/**
 * Reads a bucket's theoretical arrival time (`tat`, us, null: idle) as the delivery scripts do, with the lease
 * H its tokens are granted with (the limits' rh): the same room and time the scripts would find.
 */
export function readRate(rate: Rate, tat: string | null, leaseMs: number, nowMs: number): RateReading {
  const nowUs = nowMs * 1000;
  const T = (rate.perMs * 1000) / rate.n;
  const tolerance = (rate.burst - 1) * T - leaseMs * 1000;
  // A lease beyond what the burst covers checks the unclamped TAT, one token at a time.
  const base = tolerance < 0 ? Number(tat ?? 0) : Math.max(Number(tat ?? 0), nowUs);
  const at = base - tolerance;
  const room = at > nowUs ? 0 : tolerance < 0 ? 1 : 1 + Math.floor((nowUs - at) / T);
  return { ...rate, room, roomAt: at <= nowUs ? null : Math.ceil(at / 1000) };
}

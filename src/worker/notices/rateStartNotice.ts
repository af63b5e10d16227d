import type { Logger } from 'pino';
import { ThrottleSpec } from '../../declarations/ThrottleSpec';
import { formatWindow } from '../../declarations/windowText';
import { rateShareKept, rateStartDeadlineMs } from '../../declarations/validateLimits';

/** Below this share of its rate, what keeping a rate at processor start costs is said once, with the fix. */
const SAID_BELOW_SHARE = 0.95;

/**
 * Says, once at start, which declared rates an exact worker keeps at processor start at a cost to their
 * sustained rate (a burst too small to cover the start deadline: rateStartDeadlineMs), how much, and the two
 * fixes: a burst that covers the deadline, or `leaseMs: 0` (the rate kept at processedOn only).
 */
export function rateStartNotice(logger: Logger, queue: string, throttles: readonly ThrottleSpec[], startDeadlineMs: number): void {
  if (startDeadlineMs <= 0) return;
  for (const throttle of throttles) {
    const rate = throttle.tokenRate;
    if (!rate) continue;
    const deadlineMs = rateStartDeadlineMs(rate, startDeadlineMs);
    const share = rateShareKept(rate, deadlineMs);
    if (share >= SAID_BELOW_SHARE) continue;
    const spacingMs = rate.perMs / rate.n / share;
    const coveringBurst = 1 + Math.ceil((deadlineMs * rate.n) / rate.perMs);
    const per = formatWindow(rate.perMs);
    logger.warn(
      { queue, throttle: throttle.name, startDeadlineMs: deadlineMs, shareOfRate: Number(share.toFixed(3)) },
      `throttle '${throttle.name}': rate(${rate.n}, '${per}', { burst: ${rate.burst} }) is kept at processor start by granting one token every `
      + `${Number(spacingMs.toFixed(1))} ms (a processor starts up to ${deadlineMs} ms after its grant): ${Number((rate.n * share).toFixed(1))} per ${per}, `
      + `${Math.round(share * 100)} % of the rate. Give it burst: ${coveringBurst} to keep ${rate.n} per ${per} (at most ${coveringBurst} at once), `
      + 'or leaseMs: 0 to keep it at processedOn only.',
    );
  }
}

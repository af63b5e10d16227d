import { describeKeyPart } from '../declarations/Key';
import { EffectiveThrottle } from '../declarations/mergeDeclarations';
import { ThrottleSummary } from './types';

/** A throttle in effect as stats show it, with how many live workers declare it. */
export function throttleSummary(throttle: EffectiveThrottle, declaredBy: number): ThrottleSummary {
  return {
    name: throttle.name,
    limits: throttle.limits.map((limit) => ({ ...limit })),
    rate: throttle.tokenRate ? { ...throttle.tokenRate } : null,
    concurrency: throttle.maxInFlight ?? null,
    key: throttle.keyParts ? throttle.keyParts.map(describeKeyPart) : null,
    keyParts: throttle.keyParts ? [...throttle.keyParts] : null,
    missing: throttle.missing,
    declaredBy,
  };
}

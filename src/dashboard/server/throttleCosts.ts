import type { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { describeCost } from '../../declarations/Cost';

/**
 * Per throttle name, the cost its jobs count against its limits, as the live declarations say it
 * ('Cost.data("tokens")'); throttles without one are left out. Declarations of one throttle must agree on
 * their cost (mergeDeclarations refuses others), so the first found is the throttle's. ThrottleStats does not
 * carry it; the registry read is one HGETALL, whatever the number of buckets.
 */
export async function readCosts(admin: ThrottleAdmin): Promise<Map<string, string>> {
  const costs = new Map<string, string>();
  for (const entry of await admin.liveEntries()) {
    for (const declaration of entry.declarations) {
      if (declaration.costSpec && !costs.has(declaration.name)) costs.set(declaration.name, describeCost(declaration.costSpec));
    }
  }
  return costs;
}

import { CostSpec, costCapacity, rateCapacity } from '../declarations/Cost';
import { limitsOf, unknownKind } from '../declarations/LimitSpec';
import { EffectiveThrottle } from '../declarations/mergeDeclarations';
import { formatWindow } from '../declarations/windowText';

/** A job's cost in one throttle: what it counts against every limit, or why it cannot be counted. */
export type JobCost = { readonly cost: number } | { readonly error: string };

/** The value at a dotted path of job data (a key's or a cost's `data` source), undefined where the path breaks. */
export function atPath(data: unknown, path: string): unknown {
  let value = data;
  for (const segment of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

function describeSource(spec: CostSpec): string {
  return spec.source.kind === 'data' ? `job.data.${spec.source.path}` : `attribute '${spec.source.name}'`;
}

/**
 * Reads a job's cost as the classifier does (and the delivery script's, lua/includes/classifyInLua.lua, in the
 * same way): a positive whole number at the source, else the throttle's default, else an error; a cost above
 * what the throttle could ever let go at once (costCapacity) is an error too.
 */
export function jobCost(throttle: EffectiveThrottle, data: unknown, attributes: Record<string, unknown>): JobCost {
  const spec = throttle.costSpec;
  if (!spec) return { cost: 1 };
  const value = spec.source.kind === 'data' ? atPath(data, spec.source.path) : attributes[spec.source.name];
  let cost: number;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1) {
    cost = value;
  } else if (spec.default !== undefined) {
    cost = spec.default;
  } else {
    return {
      error: `Throttle '${throttle.name}' counts ${describeSource(spec)} for each job, and this job's is ${value === undefined ? 'missing' : JSON.stringify(value)}: `
        + `it must be a positive whole number. Give the job one, or declare a default: cost(…, { default: 1 }).`,
    };
  }
  const capacity = costCapacity(throttle);
  if (cost > capacity) {
    return {
      error: `Throttle '${throttle.name}': this job costs ${cost}, more than the ${capacity} its limits let go at once (${describeCapacity(throttle, capacity)}): it could never be delivered. Split the job, or raise the limit.`,
    };
  }
  return { cost };
}

function describeCapacity(throttle: EffectiveThrottle, capacity: number): string {
  // The first limit that lets exactly `capacity` go at once, windows before the rate before the concurrency.
  for (const limit of limitsOf(throttle)) {
    switch (limit.kind) {
      case 'window':
        if (limit.max === capacity) return `limit ${limit.max} per ${formatWindow(limit.windowMs)}`;
        break;
      case 'rate':
        if (rateCapacity(throttle) === capacity) {
          return limit.rate.burst === capacity
            ? `burst ${capacity} of its rate`
            : `burst ${limit.rate.burst} of its rate, less the ${limit.rate.burst - capacity} it refills within the ${throttle.rateLeasedMs} ms a leased token may be spent after its grant (leaseMs of the leased workers)`;
        }
        break;
      case 'concurrency':
        break;
      default:
        unknownKind(limit);
    }
  }
  return `concurrency ${capacity}`;
}

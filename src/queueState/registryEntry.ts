import { ThrottleSpec } from '../declarations/ThrottleSpec';
import type { FairnessSpec } from '../declarations/Fairness';

/** One live worker's entry in the declaration registry. */
export interface RegistryEntry {
  /** The worker's id, unique per ThrottledWorker instance. */
  readonly workerId: string;
  /** The queue the worker consumes. */
  readonly queue: string;
  /** bullmq's key prefix of the queue: a namespace may hold queues of several prefixes. */
  readonly prefix: string;
  /** The throttles the worker declares, as it declared them. */
  readonly declarations: readonly ThrottleSpec[];
  /** Whether the worker computes attributes (an `attributes` function); absent in older entries. */
  readonly attributes?: boolean;
  /** How the worker delivers: a grantor rebuilding after a failover holds longer when deliveries were exact. */
  readonly delivery?: 'exact' | 'leased';
  /** Its declarations' time to live, and its lease (h): how long a grantor's rebuild must wait for them. */
  readonly declarationTtlMs?: number;
  /** The worker's lease h (ms) as it delivers: its start deadline in exact delivery, its tokens' lifetime in leased. */
  readonly leaseMs?: number;
  /** The worker's fairness key and weights (its `fairness` option), if any. */
  readonly fairness?: FairnessSpec;
}

import { bindingLimit } from './bindingLimit';
import { bucketMemory } from './bucketMemory';
import { clusterThroughput } from './clusterThroughput';
import { dashboardData } from './dashboardData';
import { deliveryByKind } from './deliveryByKind';
import { fairness } from './fairness';
import { grantThroughput } from './grantThroughput';
import { headOfLine } from './headOfLine';
import { limiterAccuracy } from './limiterAccuracy';
import { processorStarts } from './processorStarts';
import { redisInstructions } from './redisInstructions';
import { throttleStats } from './throttleStats';
import { workerThroughput } from './workerThroughput';
import type { Benchmark } from './types';

/**
 * Every benchmark `npm run bench` knows, in the order they run. To add one (BullMQ worker throughput,
 * accuracy against BullMQ's limiter, head-of-line latency, stats latency, ...), write a module under
 * benchmarks/ exporting a Benchmark and list it here.
 */
export const benchmarks: readonly Benchmark[] = [
  grantThroughput,
  bucketMemory,
  workerThroughput,
  redisInstructions,
  bindingLimit,
  deliveryByKind,
  fairness,
  limiterAccuracy,
  processorStarts,
  headOfLine,
  throttleStats,
  clusterThroughput,
  dashboardData,
];

import { selectAdapter } from '../bullmq/selectAdapter';

export { SUPPORTED_BULLMQ_RANGE } from '../bullmq/selectAdapter';
export { installedBullmqVersion } from '../bullmq/installedBullmq';

/** Throws UnsupportedBullmqError, naming the supported range and the fix, unless `version` is supported. */
export function assertSupportedBullmq(version?: string): void {
  selectAdapter(version);
}

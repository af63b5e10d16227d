/**
 * bullmq-throttle/bull-board: held jobs in Bull Board. An entry point of its own, so that the main entry never
 * loads @bull-board/api (an optional peer).
 */
export { ThrottledBullMQAdapter } from './ThrottledBullMQAdapter';
export type { BoardOptions, ThrottledBullMQAdapterOptions, ThrottledJobCounts } from './ThrottledBullMQAdapter';
export type { ThrottledQueueViewOptions } from './throttledQueueView';
export { HELD_SEPARATOR, markedName } from './heldJobMark';
export type { HeldPlace } from './heldJobs';

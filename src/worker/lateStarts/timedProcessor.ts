import { performance } from 'node:perf_hooks';
import { LateStartError } from '../../errors/LateStartError';
import type { DispatchDelay } from '../completion/dispatchDelay';
import type { ProcessorStarts } from './processorStarts';

/** What the wrapper reads of the gate, each time a processor is called (the gate connects after it is built). */
export interface TimedGate {
  readonly starts: ProcessorStarts | undefined;
  readonly dispatchDelay: DispatchDelay;
}

/**
 * A processor function wrapped so that its start deadline is checked, the clock read as the last thing before it
 * is called (all that the check notes waits until the processor returns), and its dispatch delay (from processedOn
 * to its start, in throttleStats) and run timed. A pause of the process there (the OS descheduling it on a loaded
 * machine, 20-50 ms seen with every core busy) would still start it later than its delivery was counted for, so a
 * processor that returns from its synchronous start past the deadline has its tokens counted longer. The wrapper
 * declares as many parameters as the processor: bullmq gives a processor an AbortSignal (worker.cancelJob,
 * cancelAllJobs) only when it declares a third (processor.length >= 3).
 */
export function timedProcessor<J extends { id?: string; processedOn?: number }, R>(gate: TimedGate, processor: (job: J, ...rest: unknown[]) => Promise<R>): typeof processor {
  const timed = async (job: J, ...rest: unknown[]): Promise<R> => {
    const starts = gate.starts;
    const delivery = starts?.pendingStart(job.id);
    const startedMs = Date.now();
    const checkedAt = performance.now();
    if (delivery && checkedAt > delivery.latestAt) throw new LateStartError(job.id, starts!.refuseStart(delivery, checkedAt).deadlineMs);
    try {
      let running: Promise<R>;
      try {
        running = processor(job, ...rest);
      } finally {
        if (delivery) starts!.started(delivery, checkedAt, performance.now());
      }
      gate.dispatchDelay.started(job.processedOn, startedMs);
      return await running;
    } finally {
      gate.dispatchDelay.ended(performance.now() - checkedAt);
    }
  };
  Object.defineProperty(timed, 'length', { value: processor.length });
  return timed;
}

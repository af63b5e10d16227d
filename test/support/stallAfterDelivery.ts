import { parseTakeReply } from '../../src/lua/calls/takeNextJobs';
import { watchDeliveryCalls } from './deliveryCalls';

/**
 * A process stalled between a delivery and its processor's start (a busy event loop, a collector pause): holds
 * the event loop `ms` right after the first exact delivery call that brings a job of a name `pick` accepts, before
 * its reply reaches the worker. Returns the restore. (bullmq's main loop now starts each job it fetched before it
 * fetches again, so a slow processor no longer holds back a job delivered with it: the stall is made here.)
 */
export function stallAfterDelivering(pick: (jobName: string) => boolean, ms: number): () => void {
  let stalled = false;
  return watchDeliveryCalls({
    replied(reply) {
      if (stalled) return;
      const names = parseTakeReply(reply).jobs.map((job) => job.fields[job.fields.indexOf('name') + 1]);
      if (!names.some(pick)) return;
      stalled = true;
      const until = performance.now() + ms;
      while (performance.now() < until) { /* busy */ }
    },
  });
}

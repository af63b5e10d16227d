import { ScriptRunner } from '../../src/lua/scripts';
import { parseTakeReply } from '../../src/lua/calls/takeNextJobs';

/**
 * A process stalled between a delivery and its processor's start (a busy event loop, a collector pause): holds
 * the event loop `ms` right after the first exact delivery call that brings a job of a name `pick` accepts, before
 * its reply reaches the worker. Returns the restore. (bullmq's main loop now starts each job it fetched before it
 * fetches again, so a slow processor no longer holds back a job delivered with it: the stall is made here.)
 */
export function stallAfterDelivering(pick: (jobName: string) => boolean, ms: number): () => void {
  const run = ScriptRunner.prototype.run;
  const pipeline = ScriptRunner.prototype.pipeline;
  let stalled = false;
  const maybeStall = (reply: unknown): void => {
    if (stalled || !Array.isArray(reply)) return;
    const names = parseTakeReply(reply).jobs.map((job) => job.fields[job.fields.indexOf('name') + 1]);
    if (!names.some(pick)) return;
    stalled = true;
    const until = performance.now() + ms;
    while (performance.now() < until) { /* busy */ }
  };
  ScriptRunner.prototype.run = async function (this: ScriptRunner, name, keys, args) {
    const reply = await run.call(this, name, keys, args);
    if (name === 'takeNextJobs') maybeStall(reply);
    return reply;
  };
  // A call whose node's replicas are looked up goes in a pipeline with the lookup (src/redis/ReplicaConfirmation.ts).
  ScriptRunner.prototype.pipeline = async function (this: ScriptRunner, scripts, commands) {
    const entries = await pipeline.call(this, scripts, commands);
    scripts.forEach((script, i) => { if (script.name === 'takeNextJobs' && !entries[i].error) maybeStall(entries[i].reply); });
    return entries;
  };
  return () => {
    ScriptRunner.prototype.run = run;
    ScriptRunner.prototype.pipeline = pipeline;
  };
}

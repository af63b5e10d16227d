import { ScriptRunner } from '../../src/lua/scripts';

/** What a test does around each exact delivery call (lua/takeNextJobs-19.lua) a worker in this process makes. */
export interface DeliveryCallWatch {
  /** Right before the call goes out. */
  sent?(): void;
  /** With its reply, before the worker sees it (awaited: the worker waits for it). */
  replied?(reply: unknown[]): void | Promise<void>;
}

/**
 * Watches every exact delivery call, whether it goes alone or in a pipeline with a replica lookup
 * (src/redis/ReplicaConfirmation.ts). Returns the restore.
 */
export function watchDeliveryCalls(watch: DeliveryCallWatch): () => void {
  const run = ScriptRunner.prototype.run;
  const pipeline = ScriptRunner.prototype.pipeline;
  ScriptRunner.prototype.run = async function (this: ScriptRunner, name, keys, args) {
    if (name !== 'takeNextJobs') return run.call(this, name, keys, args);
    watch.sent?.();
    const reply = await run.call(this, name, keys, args);
    await watch.replied?.(reply as unknown[]);
    return reply;
  };
  ScriptRunner.prototype.pipeline = async function (this: ScriptRunner, scripts, commands) {
    const at = scripts.findIndex((s) => s.name === 'takeNextJobs');
    if (at >= 0) watch.sent?.();
    const entries = await pipeline.call(this, scripts, commands);
    if (at >= 0 && !entries[at].error) await watch.replied?.(entries[at].reply as unknown[]);
    return entries;
  };
  return () => {
    ScriptRunner.prototype.run = run;
    ScriptRunner.prototype.pipeline = pipeline;
  };
}

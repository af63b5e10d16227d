import { Worker } from 'bullmq';
import { ThrottledWorker } from '../../src';

/** Stops a worker as a crash would: no more heartbeats, no withdrawal, so its declaration lapses after its TTL. */
export async function crash(worker: ThrottledWorker): Promise<void> {
  const gate = (worker as unknown as { gate: { connected?: { heartbeat: { stop(): void } }; closed: boolean } }).gate;
  gate.connected?.heartbeat.stop();
  gate.closed = true;
  await Worker.prototype.close.call(worker, true);
}

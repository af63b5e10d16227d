import { Writable } from 'node:stream';
import { Job, Queue, Worker } from 'bullmq';
import pino from 'pino';
import { Throttle } from '../../src/declarations/Throttle';
import { ThrottleAdmin } from '../../src/admin/ThrottleAdmin';
import { ThrottledWorker } from '../../src/worker/ThrottledWorker';
import { BenchCluster, Layout } from '../support/benchCluster';

export interface WorkerSpec {
  kind: 'plain' | 'throttled';
  concurrency: number;
  throttles?: readonly Throttle[];
  leaseMs?: number;
}

/**
 * One case's queues and workers on the benchmark's cluster: one Queue per queue of the layout on a shared
 * Cluster client (for adding), one worker per queue, each on a Cluster client of its own (as workers in
 * separate processes would be). close() closes them all and empties the cluster.
 */
export class ClusterRig {
  readonly queues: Queue[];
  readonly workers: Worker[] = [];
  readonly errors: Error[] = [];
  /** The delivery mode each ThrottledWorker logged ('leased delivery' / 'exact delivery'). */
  readonly modes: string[] = [];
  private admin?: ThrottleAdmin;

  constructor(readonly bench: BenchCluster, readonly layout: Layout) {
    const client = bench.client();
    this.queues = layout.queues.map((name) => new Queue(name, { connection: client, prefix: layout.prefix }));
  }

  /** Adds `perQueue` jobs (or perQueue[q] to queue q) with addBulk, 1,000 per call; `data(queueIndex, i)` builds job i's data. */
  async addBacklog(perQueue: number | readonly number[], data: (queue: number, i: number) => object, chunk = 1000): Promise<void> {
    await Promise.all(this.queues.map(async (queue, q) => {
      const count = typeof perQueue === 'number' ? perQueue : perQueue[q];
      for (let i = 0; i < count; i += chunk) {
        const size = Math.min(chunk, count - i);
        await queue.addBulk(Array.from({ length: size }, (_, j) => ({ name: 'job', data: data(q, i + j) })));
      }
    }));
  }

  /** Starts one worker per queue running `processor(job, queueIndex)`. */
  startWorkers(spec: WorkerSpec, processor: (job: Job, queue: number) => Promise<void>): void {
    this.layout.queues.forEach((name, q) => {
      const options = { connection: this.bench.client(), prefix: this.layout.prefix, concurrency: spec.concurrency };
      const run = (job: Job) => processor(job, q);
      const worker: Worker = spec.kind === 'plain'
        ? new Worker(name, run, options)
        : new ThrottledWorker(name, run, { ...options, throttles: spec.throttles ?? [], leaseMs: spec.leaseMs, logger: this.modeLogger() });
      worker.on('error', (error: Error) => { this.errors.push(error); });
      this.workers.push(worker);
    });
  }

  /** A pino logger that keeps only the delivery-mode lines (ThrottleGate logs 'leased delivery' or 'exact delivery' at start). */
  private modeLogger(): pino.Logger {
    const stream = new Writable({
      write: (chunk, _encoding, done) => {
        for (const line of String(chunk).split('\n').filter(Boolean)) {
          const msg = (JSON.parse(line) as { msg?: string }).msg;
          if (msg === 'leased delivery' || msg === 'exact delivery') this.modes.push(msg);
        }
        done();
      },
    });
    return pino({ level: 'info' }, stream);
  }

  /** Throws unless every ThrottledWorker logged `mode` (e.g. 'leased delivery'). */
  assertModes(mode: string, what: string): void {
    if (this.modes.length !== this.workers.length || this.modes.some((m) => m !== mode)) {
      throw new Error(`${what}: expected every worker to log '${mode}', they logged [${this.modes.join(', ')}]`);
    }
  }

  assertNoErrors(what: string): void {
    if (this.errors.length > 0) throw new Error(`${what}: ${this.errors.length} worker error(s), first: ${this.errors[0].stack ?? this.errors[0].message}`);
  }

  /** A ThrottleAdmin on a Cluster client, for throttleStats (read while the workers live: it asks the live declarations). */
  throttleAdmin(): ThrottleAdmin {
    this.admin ??= new ThrottleAdmin({ connection: this.bench.client(), prefix: this.layout.prefix });
    return this.admin;
  }

  async closeWorkers(): Promise<void> {
    await Promise.all(this.workers.splice(0).map((worker) => worker.close()));
  }

  async close(): Promise<void> {
    const problems: unknown[] = [];
    const attempt = async (step: () => Promise<unknown>) => { try { await step(); } catch (error) { problems.push(error); } };
    await attempt(() => this.closeWorkers());
    if (this.admin) await attempt(() => this.admin!.close());
    for (const queue of this.queues) await attempt(() => queue.close());
    await attempt(() => this.bench.closeClients());
    await attempt(() => this.bench.flush());
    if (problems.length > 0) throw new Error(`cleanup of ${this.layout.prefix} failed: ${String(problems[0])}`);
  }
}

import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { OnApplicationBootstrap } from '@nestjs/common';
import type { Job } from 'bullmq';
import { Key, Throttle, type ThrottledWorker, type ThrottledWorkerOptions } from 'bullmq-throttle';
import { PaymentsApi } from './payments-api.js';

export interface Charge { customer: string; cents: number }

// At most 5 charges in any 1 s (the provider's limit), and at most 2 per customer in any 1 s.
export const CHARGE_LIMITS = { perSecond: 5, perCustomerPerSecond: 2 };

// @nestjs/bullmq hands @Processor's worker options, as they are, to the worker class it constructs (a
// ThrottledWorker: see app.module.ts), so the throttles ride along with the usual WorkerOptions. They are
// declared in a typed constant rather than inline because @Processor types its options as bullmq's
// WorkerOptions, and an inline object literal with `throttles` would fail its excess-property check.
const workerOptions: Omit<ThrottledWorkerOptions, 'connection'> = {
  concurrency: 10,
  throttles: [
    Throttle.named('payments-api').limit(CHARGE_LIMITS.perSecond, '1s'),
    Throttle.named('payments-per-customer').key([Key.data('customer')]).limit(CHARGE_LIMITS.perCustomerPerSecond, '1s'),
  ],
};

// WorkerHost<ThrottledWorker>: `this.worker` is typed as what it is (startDeadline, ...).
@Processor('charges', workerOptions)
export class ChargesProcessor extends WorkerHost<ThrottledWorker<Charge>> implements OnApplicationBootstrap {
  // Injected by type: this is what needs emitDecoratorMetadata, hence tsc rather than tsx/esbuild.
  constructor(private readonly payments: PaymentsApi) {
    super();
  }

  // A worker that cannot start (its throttles conflict with another worker's, Redis refuses what it needs) only
  // emits `error`, and the app would run without it: awaiting its start here makes the app's start fail instead.
  // (The worker exists from @nestjs/bullmq's onModuleInit on, so not in this class's own onModuleInit.)
  async onApplicationBootstrap(): Promise<void> {
    await this.worker.waitUntilReady();
  }

  // Called only for jobs the throttles let through; the others wait held in Redis, with no attempt made.
  async process(job: Job<Charge>): Promise<string> {
    return this.payments.charge(job.data.customer, job.data.cents);
  }
}

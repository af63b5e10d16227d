import { ScriptRunner } from '../lua/scripts';
import { Delivery, DeliveryCall } from './Delivery';
import { TakeCall, takeNextJobs, TakeReply } from './takeNextJobs';

/** What a delivery call needs of its gate besides the call itself. */
export type DeliveryContext = () => Omit<TakeCall, 'tokens' | 'workerName' | 'gen'>;

/** Counts and delivers in one script, in the slot the queue and its throttles share: exact, no lease. */
export class ExactDelivery implements Delivery {
  readonly mode = 'exact';

  constructor(private readonly runner: () => ScriptRunner, private readonly context: DeliveryContext) {}

  take(call: DeliveryCall): Promise<TakeReply> {
    return takeNextJobs(this.runner(), { ...this.context(), tokens: call.tokens, workerName: call.name, gen: call.gen });
  }

  async stop(): Promise<void> {
    // Nothing is held outside the counters.
  }
}

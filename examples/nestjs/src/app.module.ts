import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { ThrottledWorker } from 'bullmq-throttle';
import { ChargesProcessor } from './charges.processor.js';
import { PaymentsApi } from './payments-api.js';

// @nestjs/bullmq's supported hook for its worker class (meant for BullMQ Pro's WorkerPro): every worker it
// creates, for @Processor classes and for registerQueue's `processors`, is then a ThrottledWorker, constructed
// as `new ThrottledWorker(queue, processor, { connection, prefix, ...@Processor's options })`. It is a static
// setting, for the whole process: set it here, before registerQueue below runs and before the app starts.
BullModule.workerClass = ThrottledWorker;

const url = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

@Module({
  imports: [
    // Connection options rather than a client: bullmq opens the connections each worker and queue needs.
    BullModule.forRoot({ connection: { host: url.hostname, port: Number(url.port || 6379) } }),
    BullModule.registerQueue({ name: 'charges' }),
  ],
  providers: [PaymentsApi, ChargesProcessor],
})
export class AppModule {}

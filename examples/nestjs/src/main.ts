// A NestJS app whose @nestjs/bullmq processor is throttled by bullmq-throttle: 20 charges for three customers go
// through ChargesProcessor, and the program checks, from the moments the payments API was called, that the limits
// held. No HTTP server: an application context is all a worker process needs.
import 'reflect-metadata';
import { getQueueToken } from '@nestjs/bullmq';
import { NestFactory } from '@nestjs/core';
import type { Queue } from 'bullmq';
import { ThrottledWorker, mostInAnyWindow } from 'bullmq-throttle';
import { AppModule } from './app.module.js';
import { ChargesProcessor, CHARGE_LIMITS, type Charge } from './charges.processor.js';
import { PaymentsApi } from './payments-api.js';

// Resolves once ChargesProcessor's worker has declared its throttles (its onApplicationBootstrap).
const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
const processor = app.get(ChargesProcessor);
// Were BullModule.workerClass set too late, the worker would be a plain bullmq Worker and nothing would be held.
if (!(processor.worker instanceof ThrottledWorker)) throw new Error('ChargesProcessor runs a plain bullmq Worker');

// Producers change nothing: the queue @nestjs/bullmq registered is a plain bullmq Queue.
const queue = app.get<Queue<Charge>>(getQueueToken('charges'));
const customers = ['acme', 'globex', 'initech'];
await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'charge', data: { customer: customers[i % 3], cents: 100 * (i + 1) } })));

const { calls } = app.get(PaymentsApi);
while (calls.length < 20) await new Promise((resolve) => setTimeout(resolve, 100));
// The worker first, so that nothing uses the queue's keys as they go; app.close() would close it too, but it
// closes the registered queue as well, and obliterate needs that open.
await processor.worker.close();
await queue.obliterate({ force: true });
await app.close();

const most = mostInAnyWindow(calls.map((c) => c.at), 1000);
const perCustomer = Math.max(...customers.map((c) => mostInAnyWindow(calls.filter((call) => call.customer === c).map((call) => call.at), 1000)));
const seconds = (Math.max(...calls.map((c) => c.at)) - Math.min(...calls.map((c) => c.at))) / 1000;
console.log(`20 charges in ${seconds.toFixed(1)} s: at most ${most} in any 1 s (limit ${CHARGE_LIMITS.perSecond}), ${perCustomer} for one customer (limit ${CHARGE_LIMITS.perCustomerPerSecond})`);
if (most > CHARGE_LIMITS.perSecond || perCustomer > CHARGE_LIMITS.perCustomerPerSecond) {
  console.error('a limit was exceeded');
  process.exit(1);
}
console.log(`held: at most ${CHARGE_LIMITS.perSecond} charges in any 1 s, and ${CHARGE_LIMITS.perCustomerPerSecond} for one customer`);

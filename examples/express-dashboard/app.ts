// The app: reports rendered by a PDF service that takes at most 2 renders per customer in any 3 s. A
// ThrottledWorker keeps to that; one Express server shows it twice, in bullmq-throttle's dashboard and in Bull Board.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import { createBullBoard } from '@bull-board/api';
import { ExpressAdapter } from '@bull-board/express';
import { Key, Throttle, ThrottledWorker, createDashboardHandler } from 'bullmq-throttle';
// An entry point of its own, so that an app without Bull Board never loads @bull-board/api.
import { ThrottledBullMQAdapter } from 'bullmq-throttle/bull-board';

export const QUEUE = 'reports';
export const THROTTLE = 'pdf-per-customer';
// Low on purpose: a batch of 6 reports per customer keeps 4 of each held for a few seconds.
export const LIMIT = { max: 2, windowMs: 3_000 };

export interface Report {
  customer: string;
  report: string;
}

export interface App {
  queue: Queue<Report>;
  /** When each render began: the limit is checked from these. */
  starts: { at: number; customer: string }[];
  urls: { home: string; dashboard: string; bullBoard: string };
  close(): Promise<void>;
}

export async function startApp(redisUrl: string, port: number): Promise<App> {
  // One client for the queue, the worker (bullmq duplicates it for its blocking reads) and the dashboard;
  // maxRetriesPerRequest: null, as bullmq's workers require.
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue<Report>(QUEUE, { connection });
  const starts: App['starts'] = [];
  const worker = new ThrottledWorker<Report>(QUEUE, async (job) => {
    starts.push({ at: Date.now(), customer: job.data.customer });
    await new Promise((resolve) => setTimeout(resolve, 300)); // the PDF service at work
  }, {
    connection,
    concurrency: 10,
    throttles: [Throttle.named(THROTTLE).key([Key.data('customer')]).limit(LIMIT.max, LIMIT.windowMs)],
  });
  // The dashboard lists the queues that have a live ThrottledWorker: wait until this one has declared itself.
  await worker.waitUntilReady();

  // Read-only; `writes: true` adds pause, resume, limit and release buttons (each asks before it acts).
  const dashboard = createDashboardHandler({ connection });
  // Bull Board's BullMQAdapter counts only bullmq's lists, where held jobs are not: this one adds them as waiting.
  const board = new ThrottledBullMQAdapter(queue);
  const serverAdapter = new ExpressAdapter().setBasePath('/admin/queues');
  createBullBoard({ queues: [board], serverAdapter });

  const app = express();
  // Neither page has authentication of its own: a real app puts its own in front, app.use('/admin', requireAdmin).
  app.use('/admin/throttles', dashboard); // links follow the mount path (req.baseUrl)
  app.use('/admin/queues', serverAdapter.getRouter());
  app.get('/', (_req, res) => {
    res.type('html').send('<a href="/admin/throttles/">throttles</a> · <a href="/admin/queues/">Bull Board</a>');
  });

  const server = http.createServer(app);
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
  const home = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

  return {
    queue,
    starts,
    urls: { home, dashboard: `${home}admin/throttles/`, bullBoard: `${home}admin/queues/` },
    async close() {
      // The dashboard first: it ends its live-update streams, which an open page would otherwise keep open.
      await dashboard.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await board.close();
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      await connection.quit();
    },
  };
}

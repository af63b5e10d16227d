// An ES module app in TypeScript on bullmq 5: a newsletter sender. The mail provider takes at most 10 messages in
// any 1 s from us, and each recipient domain at most 3 in any 1 s with no more than 2 connections open at once.
import { Queue } from 'bullmq';
import { Key, Throttle, ThrottledWorker, mostInAnyWindow } from 'bullmq-throttle';

const url = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
// bullmq's connection options (or an ioredis client of the version bullmq 5 brings).
const connection = { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };

const throttles = [
  Throttle.named('mail-provider').limit(10, '1s'),
  Throttle.named('mail-per-domain').key([Key.data('domain')]).limit(3, '1s').concurrency(2),
];

interface Email { to: string; domain: string }
const queue = new Queue<Email>('newsletter', { connection });
const starts: { at: number; domain: string }[] = [];
const open = new Map<string, number>();
let mostOpenToADomain = 0;

const worker = new ThrottledWorker<Email>('newsletter', async (job) => {
  starts.push({ at: Date.now(), domain: job.data.domain });
  const now = (open.get(job.data.domain) ?? 0) + 1;
  open.set(job.data.domain, now);
  mostOpenToADomain = Math.max(mostOpenToADomain, now);
  await new Promise((resolve) => setTimeout(resolve, 600)); // the SMTP conversation
  open.set(job.data.domain, open.get(job.data.domain)! - 1);
}, { connection, concurrency: 20, throttles });

const domains = ['example.com', 'example.org', 'example.net', 'example.edu'];
await queue.addBulk(Array.from({ length: 30 }, (_, i) => {
  const domain = domains[i % domains.length];
  return { name: 'send', data: { to: `reader${i}@${domain}`, domain } };
}));
while (starts.length < 30) await new Promise((resolve) => setTimeout(resolve, 100));
await worker.close();
await queue.obliterate({ force: true });
await queue.close();

const most = mostInAnyWindow(starts.map((s) => s.at), 1000);
const perDomain = Math.max(...domains.map((d) => mostInAnyWindow(starts.filter((s) => s.domain === d).map((s) => s.at), 1000)));
const seconds = (Math.max(...starts.map((s) => s.at)) - Math.min(...starts.map((s) => s.at))) / 1000;
console.log(`30 emails in ${seconds.toFixed(1)} s: at most ${most} in any 1 s (limit 10), ${perDomain} to one domain (limit 3), ${mostOpenToADomain} open to one domain at once (limit 2)`);
if (most > 10 || perDomain > 3 || mostOpenToADomain > 2) {
  console.error('a limit was exceeded');
  process.exit(1);
}
console.log('held: at most 10 emails in any 1 s; to a domain, at most 3 in any 1 s and 2 at once');

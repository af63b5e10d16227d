// Two regions' order queues on different Redis Cluster nodes, paying through one provider that takes at most 10
// charges in any 1 s from all of us together. Each queue has two workers (think: two processes per region).
import { Cluster } from 'ioredis';
import { Queue } from 'bullmq';
import { Throttle, ThrottleKeys, ThrottledWorker, mostInAnyWindow } from 'bullmq-throttle';

// host:port seeds of any nodes of the cluster; ioredis finds the rest.
const seeds = (process.env.REDIS_CLUSTER_NODES ?? '127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002').split(',').map((seed) => {
  const [host, port] = seed.trim().split(':');
  return { host, port: Number(port) };
});
// bullmq's workers block on Redis: maxRetriesPerRequest must be null on every node's connection.
const connection = new Cluster(seeds, { redisOptions: { maxRetriesPerRequest: null } });

// bullmq's key prefix (its default is 'bull'): one of the example's own, so that it cannot touch real queues.
const prefix = 'throttle-example';
// In a cluster each queue's keys must share a slot: the hash tag in the name puts `throttle-example:{eu}orders:*` in
// eu's slot. Two tags, two slots (on different masters when 3 masters split the slots evenly).
const QUEUES = ['{eu}orders', '{us}orders'];
const JOBS_EACH = 20;
const LIMIT = 10;

// The same name in the same namespace (the bullmq prefix, unless `throttlePrefix` says otherwise) is one throttle
// wherever it is declared. Its counters live in the namespace's own slot: the grantor's.
const throttles = [Throttle.named('payments-api').limit(LIMIT, '1s')];

// Where everything lives. A queue outside the grantor's slot leases its deliveries from the grantor (tokens spent
// within `leaseMs`, 100 ms, of their grant); one in the same slot would count them exactly, in one script.
const keys = new ThrottleKeys(prefix);
async function placeOf(key: string): Promise<string> {
  const slot = (await connection.cluster('KEYSLOT', key)) as number;
  return `slot ${slot} on ${connection.slots[slot]?.[0] ?? '?'}`;
}
const grantorPlace = await placeOf(keys.registryVersion);
for (const name of QUEUES) console.log(`queue ${name}: ${await placeOf(keys.queue(name).state)}`);
console.log(`throttles (the grantor): ${grantorPlace}`);

const starts: { at: number; queue: string }[] = [];
const queues = QUEUES.map((name) => new Queue(name, { connection, prefix }));
const workers = QUEUES.flatMap((name) => [1, 2].map(() => new ThrottledWorker(name, async () => {
  starts.push({ at: Date.now(), queue: name }); // counted where the guarantee is: as the processor starts
  await new Promise((resolve) => setTimeout(resolve, 100)); // the provider's call
}, { connection, prefix, concurrency: 10, throttles })));

// Producers change nothing: plain bullmq Queues.
for (const queue of queues) {
  await queue.addBulk(Array.from({ length: JOBS_EACH }, (_, i) => ({ name: 'charge', data: { order: `${queue.name}-${i}` } })));
}
while (starts.length < QUEUES.length * JOBS_EACH) await new Promise((resolve) => setTimeout(resolve, 100));

await Promise.all(workers.map((worker) => worker.close()));
for (const queue of queues) {
  await queue.obliterate({ force: true });
  await queue.close();
}
await connection.quit();

const most = mostInAnyWindow(starts.map((s) => s.at), 1000);
const perQueue = QUEUES.map((name) => `${mostInAnyWindow(starts.filter((s) => s.queue === name).map((s) => s.at), 1000)} from ${name}`);
const seconds = (Math.max(...starts.map((s) => s.at)) - Math.min(...starts.map((s) => s.at))) / 1000;
console.log(`${starts.length} charges from ${workers.length} workers on ${QUEUES.length} slots in ${seconds.toFixed(1)} s: at most ${most} in any 1 s together (limit ${LIMIT}); alone, at most ${perQueue.join(' and ')}`);
if (most > LIMIT) {
  console.error('the shared limit was exceeded');
  process.exit(1);
}
console.log(`held: at most ${LIMIT} charges in any 1 s across ${QUEUES.join(' and ')}`);

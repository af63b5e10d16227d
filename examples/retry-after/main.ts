// A worker syncs contacts to a third-party API (partnerApi.ts) that allows 5 requests in any 1 s per key and
// answers 429 with Retry-After beyond that. The worker declares the documented limit as a Throttle, so that it
// does not cause 429s itself. When another user of the same key makes the API answer 429 anyway, the processor
// throws RetryAfterError: the throttle pauses for as long as the API asked, for every worker, and the job goes
// back held, with no attempt counted, to run again once the pause is over.
import { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import { RetryAfterError, Throttle, ThrottleAdmin, ThrottledWorker } from 'bullmq-throttle';
import { DOCUMENTED_LIMIT, startPartnerApi } from './partnerApi.js';

const QUEUE = 'crm-sync';
const JOBS = 20;
interface Contact { contactId: number }

// The documented 5 in any 1 s, declared over 1.1 s: the API counts a request when it arrives, a moment after our
// processor started it, and that jitter must not tip a request over the API's limit.
const crmApi = Throttle.named('crm-api').limit(DOCUMENTED_LIMIT.max, DOCUMENTED_LIMIT.windowMs + 100);

/** Retry-After is either a number of seconds or an HTTP date. */
function retryAfterMs(header: string | null): number {
  const seconds = Number(header);
  if (header && Number.isFinite(seconds) && seconds > 0) return seconds * 1000;
  const date = header ? Date.parse(header) : NaN;
  if (date > Date.now()) return date - Date.now();
  return 1000; // missing or already past: still back off a little rather than call again at once
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until<T>(what: string, read: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const connection = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const api = await startPartnerApi();
const queue = new Queue<Contact>(QUEUE, { connection });
const admin = new ThrottleAdmin({ connection });

const turnedAway: { jobId: string; ms: number }[] = [];
let completed = 0;
let failed = 0;
const worker = new ThrottledWorker<Contact>(QUEUE, async (job) => {
  const response = await fetch(`${api.url}/v1/contacts/${job.data.contactId}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', 'x-caller': 'sync-worker' },
    body: JSON.stringify(job.data),
  });
  const body = await response.text();
  if (response.status === 429) {
    const ms = retryAfterMs(response.headers.get('retry-after'));
    turnedAway.push({ jobId: job.id!, ms });
    // Not a failure: every bucket this job draws from pauses for `ms`, for every worker, and the job goes back,
    // held there, without counting an attempt.
    throw new RetryAfterError(ms);
  }
  // Anything else is a real failure: bullmq's attempts and backoff apply as usual.
  if (!response.ok) throw new Error(`the API answered ${response.status}: ${body}`);
}, { connection, concurrency: 5, throttles: [crmApi] });
worker.on('completed', () => { completed += 1; });
worker.on('failed', () => { failed += 1; });

let ok = false;
try {
  // Producers change nothing: a plain bullmq Queue, and bullmq's default of one attempt per job.
  await queue.addBulk(Array.from({ length: JOBS }, (_, i) => ({ name: 'sync', data: { contactId: i + 1 } })));

  // Another script with the same API key (a nightly export, say) makes 6 calls at once when 8 contacts are synced:
  // the API locks the key out, and turns away the calls we have under way then.
  await until('8 contacts synced', () => (completed >= 8 ? true : undefined));
  const exportAt = Date.now();
  await Promise.all(Array.from({ length: 6 }, () => fetch(`${api.url}/v1/export`, { headers: { 'x-caller': 'export-script' } }).then((r) => r.text())));
  const first = await until('a sync call turned away', () => turnedAway[0]);

  // While the pause lasts, ask the throttle layer why the job waits: Redis has the pause, and the job held in it.
  const pause = await until('the turned-away job held in its paused bucket', async () => {
    const asked = Date.now();
    const why = await admin.explainJob(QUEUE, first.jobId);
    const pausedUntil = why.buckets.find((b) => b.throttle === 'crm-api')?.paused?.until;
    if (why.held !== 'waiting-on-bucket' || !pausedUntil) return undefined;
    // The pause's end on this process's clock, from the time left on Redis's: at the earliest.
    return { seenAt: Date.now(), endsAt: asked + (pausedUntil - why.at), reason: why.reason };
  }, first.ms);

  await until(`all ${JOBS} jobs to complete`, () => (completed + failed >= JOBS ? true : undefined));

  // What the API saw of us, and what bullmq kept of the jobs.
  const ours = api.calls.filter((c) => c.caller === 'sync-worker');
  const served = ours.filter((c) => c.status === 200).length;
  const refused = ours.filter((c) => c.status === 429);
  const refusedBeforeExport = refused.filter((c) => c.at < exportAt).length;
  const duringPause = ours.filter((c) => c.at >= pause.seenAt && c.at < pause.endsAt).length;
  const resumedAfterMs = ours.find((c) => c.at >= pause.seenAt)!.at - refused[0].at;
  const counts = await queue.getJobCounts('completed', 'failed');
  const jobs = await queue.getJobs(['completed']);
  const retried = jobs.filter((j) => turnedAway.some((t) => t.jobId === j.id)).sort((a, b) => Number(a.id) - Number(b.id));

  console.log(`the API allows ${DOCUMENTED_LIMIT.max} calls in any 1 s per key; the worker declares ${DOCUMENTED_LIMIT.max} in any 1.1 s`);
  console.log(`after 8 syncs an export script made 6 calls with the same key: the API locked the key out, and the ` +
    `${refused.length === 1 ? '1 sync call' : `${refused.length} sync calls`} under way then got 429, Retry-After: ${refused[0].retryAfterS} (429s before the export: ${refusedBeforeExport})`);
  console.log(`job ${first.jobId} meanwhile: ${pause.reason}`);
  console.log(`no sync call while the pause was in force (${duringPause}); the next came ${(resumedAfterMs / 1000).toFixed(1)} s after the 429`);
  console.log(`${JOBS} jobs: ${counts.completed} completed, ${counts.failed} failed; the API served ${served} sync calls, one per job`);
  // attemptsStarted counts deliveries (the turned-away one too); attemptsMade, what bullmq's `attempts` limits.
  console.log(`turned away, then completed: job ${retried.map((j) => j.id).join(', ')}; ` +
    `attemptsMade ${[...new Set(retried.map((j) => j.attemptsMade))].join('/')}, attemptsStarted ${[...new Set(retried.map((j) => j.attemptsStarted))].join('/')}`);
  ok = counts.completed === JOBS && counts.failed === 0 && failed === 0 && served === JOBS
    && refused.length > 0 && refusedBeforeExport === 0 && duringPause === 0
    && jobs.every((j) => j.attemptsMade === 1) && retried.length > 0 && retried.every((j) => j.attemptsStarted >= 2);
} finally {
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await admin.close();
  await api.close();
  await connection.quit();
}
if (!ok) {
  console.error('something above did not hold');
  process.exit(1);
}
console.log('held: every job completed on its one attempt, none failed, and no call reached the API while it asked us to wait');

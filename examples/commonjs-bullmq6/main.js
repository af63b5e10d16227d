// A CommonJS app on bullmq 6 and ioredis: an LLM job queue. The model's API takes at most 4,000 tokens and at most
// 8 requests in any 1 s from us. A prompt's size varies, so the tokens limit counts each job's `tokens`, not 1.
'use strict';

const { Redis } = require('ioredis');
const { Queue } = require('bullmq');
const { Cost, Throttle, ThrottledWorker, mostInAnyWindow } = require('bullmq-throttle');

const TOKENS_PER_S = 4000;
const REQUESTS_PER_S = 8;
const JOBS = 30;

// Two throttles, not one: a cost applies to every limit of its throttle, and requests must count 1 each.
// A job costing more than 4,000 tokens could never go, so it fails at once (UnrecoverableError) instead of waiting.
const throttles = [
  Throttle.named('llm-tokens').cost(Cost.data('tokens')).limit(TOKENS_PER_S, '1s'),
  Throttle.named('llm-requests').limit(REQUESTS_PER_S, '1s'),
];

/** The most tokens started in any window of `windowMs`: mostInAnyWindow's sliding window, summing costs. */
function mostCostInAnyWindow(starts, windowMs) {
  const sorted = [...starts].sort((a, b) => a.at - b.at);
  let most = 0;
  let sum = 0;
  let first = 0;
  for (const start of sorted) {
    sum += start.tokens;
    while (start.at - sorted[first].at >= windowMs) sum -= sorted[first++].tokens;
    most = Math.max(most, sum);
  }
  return most;
}

async function main() {
  // bullmq 6 takes the app's own ioredis (a peer): one client, shared by the Queue and the worker.
  const connection = new Redis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
  const queue = new Queue('completions', { connection });
  const starts = [];

  const worker = new ThrottledWorker('completions', async (job) => {
    // Recorded where the guarantee is counted: the moment the processor starts.
    starts.push({ at: Date.now(), tokens: job.data.tokens });
    await new Promise((resolve) => setTimeout(resolve, 200)); // the model answering
  }, { connection, concurrency: 20, throttles });

  // Producers change nothing: a plain Queue. Every third prompt is long (tokens bind), the rest short (requests bind).
  await queue.addBulk(Array.from({ length: JOBS }, (_, i) => ({
    name: 'complete',
    data: { prompt: `prompt ${i}`, tokens: i % 3 === 0 ? 1500 : 100 + 10 * i },
  })));
  while (starts.length < JOBS) await new Promise((resolve) => setTimeout(resolve, 100));

  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await connection.quit();

  const requests = mostInAnyWindow(starts.map((s) => s.at), 1000);
  const tokens = mostCostInAnyWindow(starts, 1000);
  const total = starts.reduce((sum, s) => sum + s.tokens, 0);
  const seconds = (Math.max(...starts.map((s) => s.at)) - Math.min(...starts.map((s) => s.at))) / 1000;
  console.log(`${JOBS} completions (${total} tokens) in ${seconds.toFixed(1)} s: at most ${tokens} tokens in any 1 s (limit ${TOKENS_PER_S}), ${requests} requests (limit ${REQUESTS_PER_S})`);
  if (tokens > TOKENS_PER_S || requests > REQUESTS_PER_S) {
    console.error('a limit was exceeded');
    process.exit(1);
  }
  console.log(`held: at most ${TOKENS_PER_S} tokens and ${REQUESTS_PER_S} requests in any 1 s`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

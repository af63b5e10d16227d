import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Grantor, Key, Throttle, ThrottleAdmin, ThrottledWorker } from '../../src';
import { waitFor } from './bullmq';

/**
 * What an application does through bullmq-throttle, for the ACL test: producers add jobs, throttled workers
 * deliver, fail, retry and close, a Grantor grants and returns tokens, and the admin API and the CLI read.
 * Every Redis call goes through `url`, the connection of the ACL user under test.
 */
export async function runAclWorkload(url: string, prefix: string, onError: (error: Error) => void): Promise<{ cli: { code: number | null; stdout: string; stderr: string } }> {
  const parsed = new URL(url);
  const connection = {
    host: parsed.hostname, port: Number(parsed.port), username: decodeURIComponent(parsed.username) || undefined,
    password: decodeURIComponent(parsed.password) || undefined, maxRetriesPerRequest: null,
  };
  const perCustomer = Throttle.named('acl-per-customer').key([Key.data('customer')]).limit(3, '1s');
  const global = Throttle.named('acl-global').limit(50, '1s');
  const queue = new Queue('acl-orders', { connection, prefix });
  queue.on('error', onError);
  const processed = new Set<string>();
  let failedOnce = false;
  const worker = new ThrottledWorker('acl-orders', async (job) => {
    if (job.data.i === 0 && !failedOnce) { failedOnce = true; throw new Error('retry me'); }
    processed.add(job.id!);
  }, { connection, prefix, concurrency: 4, declarationTtlMs: 1_500, throttles: [perCustomer, global] });
  worker.on('error', onError);
  const grantor = new Grantor({ connection, prefix });
  const admin = new ThrottleAdmin({ connection, prefix });
  try {
    await worker.waitUntilReady();
    await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({
      name: 'n', data: { i, customer: `c${i % 3}` }, opts: { attempts: 2, backoff: { type: 'fixed', delay: 50 }, priority: i % 5 === 0 ? 1 : undefined },
    })));
    await queue.add('later', { i: 100, customer: 'c1' }, { delay: 200 });
    await waitFor(() => processed.size >= 10, 20_000, 'the first deliveries');
    await worker.pause();
    await worker.resume();
    const [granted] = await grantor.grant([[{ throttle: perCustomer, key: ['c9'] }]]);
    if (granted.granted) await grantor.returnTokens([granted.id]);
    await admin.live();
    await admin.queueStats('acl-orders');
    await admin.throttleStats('acl-per-customer');
    await admin.throttleBucket('acl-per-customer', ['c1']);
    const cli = await runCli(['stats', 'acl-orders', '--redis', url, '--prefix', prefix]);
    await waitFor(() => processed.size === 31, 30_000, 'every job');
    return { cli };
  } finally {
    await worker.close();
    await grantor.close();
    await admin.close();
    await queue.close();
  }
}

function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      cwd: join(__dirname, '..', '..'), env: { ...process.env, REDIS_URL: undefined, FORCE_COLOR: '0' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

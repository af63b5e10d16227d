import { Redis } from 'ioredis';
import { Cost, Throttle, ThrottleAdmin } from '../../src';
import { encodeSegment, UNKEYED_BUCKET } from '../../src/keys/keyEncoding';
import { adaptLimitInput, runAdaptLimit } from '../../src/lua/calls/adaptLimit';
import { ScriptRunner } from '../../src/lua/scripts';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';

/**
 * A live scenario with a throttle in each state and of each limit kind, one queue each, with known answers:
 * - 'rate-only' (rate 1 per 10m, on 'rated'): 5 jobs, 1 delivered, 4 wait: at its limit for the test's length;
 * - 'in-flight' (concurrency 2, on 'pool'): 4 jobs whose processors wait for the scenario's close: 2 in flight, 2 wait;
 * - 'open' (1000 per 1m, each job costing its data's `tokens`, on 'open'): 3 jobs of 5 tokens, delivered at once
 *   without waiting: flowing, 15 units counted; its limit adapts to 429s, and one (as a SlowDownError sends it)
 *   lowered it to 500;
 * - 'stopped' (100 per 1m, on 'stopped'): paused until resumed before its 2 jobs came: both wait;
 * - 'recovering' (100 per 1m, on 'recover'): held for 10 minutes as the scripts hold a throttle whose queue could
 *   not tell the grantor what it delivered after a Redis restart (its own hold in the grantor record's :holds).
 */
export const KIND_THROTTLES = ['rate-only', 'in-flight', 'open', 'stopped', 'recovering'] as const;
export const EXPECTED_STATES: Record<(typeof KIND_THROTTLES)[number], string> = {
  'rate-only': 'at-limit', 'in-flight': 'at-limit', open: 'flowing', stopped: 'paused', recovering: 'recovering',
};

export interface KindsScenario {
  redis: Redis;
  bed: WorkerTestBed;
  admin: ThrottleAdmin;
  close(): Promise<void>;
}

export async function startKindsScenario(label: string): Promise<KindsScenario> {
  const redis = newRedis();
  const bed = new WorkerTestBed(label);
  const admin = new ThrottleAdmin({ connection: testRedisUrl(), prefix: bed.prefix });
  let openGate!: () => void;
  const gate = new Promise<void>((resolve) => { openGate = resolve; });
  const delivered: Record<string, number> = {};
  const count = (queue: string) => async () => { delivered[queue] = (delivered[queue] ?? 0) + 1; };
  const options = { concurrency: 4, leaseMs: 0 };
  bed.worker('rated', count('rated'), { ...options, throttles: [Throttle.named('rate-only').rate(1, '10m')] });
  bed.worker('pool', async () => { await count('pool')(); await gate; }, { ...options, throttles: [Throttle.named('in-flight').concurrency(2)] });
  bed.worker('open', count('open'), { ...options, throttles: [Throttle.named('open').limit(1000, '1m').adaptive({ min: 10 }).cost(Cost.data('tokens'), { default: 1 })] });
  bed.worker('stopped', count('stopped'), { ...options, throttles: [Throttle.named('stopped').limit(100, '1m')] });
  bed.worker('recover', count('recover'), { ...options, throttles: [Throttle.named('recovering').limit(100, '1m')] });
  const scenario: KindsScenario = {
    redis, bed, admin,
    async close() {
      openGate();
      await admin.close();
      await bed.close(redis);
      await redis.quit();
    },
  };
  try {
    await waitFor(async () => (await admin.live()).throttles.length === KIND_THROTTLES.length, 20_000, 'every throttle declared');
    await admin.pause('stopped');
    const add = (queue: string, n: number) => bed.queue(queue).addBulk(Array.from({ length: n }, (_, i) => ({ name: 'job', data: { i, tokens: 5 } })));
    await Promise.all([add('rated', 5), add('pool', 4), add('open', 3), add('stopped', 2)]);
    await waitFor(() => delivered.rated === 1 && delivered.pool === 2 && delivered.open === 3, 20_000, 'the first deliveries');
    await waitFor(async () => (await admin.throttleStats('rate-only')).waiting === 4 && (await admin.throttleStats('in-flight')).waiting === 2
      && (await admin.throttleStats('stopped')).waiting === 2, 20_000, 'the jobs waiting');
    await runAdaptLimit(new ScriptRunner(redis), adaptLimitInput(admin.keys, 'open', UNKEYED_BUCKET, true));
    // The grantor record exists once a delivery script ran: a per-throttle hold, as after a restart, with the namespace's own hold long over.
    await redis.hset(admin.keys.grantorRecord, 'holdFrom', '1', 'hold', 'lease', 'holdMs', '0', 'perThrottle', '1');
    await redis.hset(admin.keys.grantorHolds, encodeSegment('recovering'), String(Date.now() + 600_000));
    await waitFor(async () => (await admin.throttleStats('recovering')).recoveryHold !== null, 20_000, "'recovering' held");
    return scenario;
  } catch (error) {
    await scenario.close();
    throw error;
  }
}

/**
 * A child process of the concurrency test: its own connection, several loops each waiting for grants
 * of one kind of delivery until the deadline, then prints every grant time as one JSON line.
 */
import { Grantor, Key, Throttle } from '../../src';

interface HammerConfig {
  url: string;
  prefix: string;
  startAt: number;
  durationMs: number;
  loops: { kind: 'A' | 'B' | 'C' }[];
}

export const shared = Throttle.named('shared').limit(100, '1s');
export const perCustomer = Throttle.named('per-customer').key([Key.data('customer')]).limit(80, 500);
export const twoLimits = Throttle.named('two-limits').limit(15, 100).limit(120, '1s');

export const DELIVERIES = {
  A: [{ throttle: shared }, { throttle: perCustomer, key: ['a'] }],
  B: [{ throttle: shared }, { throttle: perCustomer, key: ['b'] }],
  C: [{ throttle: perCustomer, key: ['c'] }, { throttle: twoLimits }],
};

async function main(): Promise<void> {
  const config = JSON.parse(process.env.HAMMER_CONFIG ?? '{}') as HammerConfig;
  const grantor = new Grantor({ connection: config.url, prefix: config.prefix });
  const grants: { kind: string; at: number }[] = [];
  await new Promise((r) => setTimeout(r, Math.max(0, config.startAt - Date.now())));
  const deadline = config.startAt + config.durationMs;
  await Promise.all(config.loops.map(async ({ kind }) => {
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      const result = await grantor.wait(DELIVERIES[kind], { maxWaitMs: left });
      // A refusal comes once the deadline passed or when room comes only after it: nothing more to take.
      if (!result.granted) return;
      grants.push({ kind, at: result.grantedAt });
    }
  }));
  await grantor.close();
  process.stdout.write(`${JSON.stringify(grants)}\n`);
}

if (require.main === module) {
  main().catch((error) => {
    process.stderr.write(`${(error as Error).stack}\n`);
    process.exit(1);
  });
}

import { Key } from '../src/declarations/Key';
import { Throttle } from '../src/declarations/Throttle';
import { Grantor } from '../src/grant/Grantor';
import type { Delivery } from '../src/grant/types';
import { TestClock } from '../test/support/testClock';
import { fillBurst, fillSpreadShifted } from './support/fill';
import { runFor } from './support/load';
import type { Benchmark, BenchmarkContext, Row } from './types';

const IN_FLIGHT = [1, 16];
const BATCH = 50;
const KEYS = 1000;
const WARM_UP_MS = 300;

// Limits that never bind. Two limits in one declaration must each be able to deny:
// 10M/1s < 100M/1m < 10M x ceil(60s/1s) = 600M.
const one = Throttle.named('one').limit(10_000_000, '1s');
const global = Throttle.named('global').limit(10_000_000, '1s').limit(100_000_000, '1m');
const perCustomer = Throttle.named('customer').key([Key.data('customer')]).limit(10_000_000, '1s').limit(100_000_000, '1m');
// Limits that bind: filled before timing, so every delivery is refused.
const fullBurst = Throttle.named('full-burst').limit(100, '1h');
const fullSpread = Throttle.named('full-spread').limit(100_000, '1h');

// A rate that never binds, alone and beside a window limit (two counters of different kinds in one bucket).
const rateOnly = Throttle.named('rate-only').rate(10_000_000, '1s', { burst: 10_000_000 });
const rateAndWindow = Throttle.named('rate-window').limit(10_000_000, '1s').rate(10_000_000, '1s', { burst: 1_000_000 });

const oneBucket: Delivery = [{ throttle: one }];
const twoBuckets: Delivery[] = Array.from({ length: KEYS }, (_, i) => [{ throttle: global }, { throttle: perCustomer, key: [`c${i}`] }]);
const anyCustomer = (): Delivery => twoBuckets[Math.floor(Math.random() * KEYS)];

interface Case {
  label: string;
  deliveriesPerCall: number;
  countersPerDelivery: number;
  /** A Grantor for the case, with any bucket it needs already filled. */
  open(context: BenchmarkContext): Promise<Grantor>;
  batch(): Delivery[];
}

const production = async (context: BenchmarkContext): Promise<Grantor> =>
  new Grantor({ connection: context.redisUrl, prefix: context.prefix });

async function burstFilled(context: BenchmarkContext): Promise<Grantor> {
  const grantor = await production(context);
  await fillBurst(grantor, [{ throttle: fullBurst }], 100);
  return grantor;
}

/** 100,000 tokens spread over 0.99 h of a shifted clock: a counter with ~220 release indices, as real traffic leaves. */
async function spreadFilled(context: BenchmarkContext): Promise<Grantor> {
  const clock = new TestClock();
  const grantor = new Grantor({ connection: context.redisUrl, prefix: context.prefix }, clock.internals());
  await fillSpreadShifted(grantor, clock, [{ throttle: fullSpread }], 100_000, 0.99 * 3_600_000, 2000);
  return grantor;
}

const copies = (count: number, next: () => Delivery): Delivery[] => Array.from({ length: count }, next);

const CASES: Case[] = [
  { label: '(a) 1 bucket, 1 limit', deliveriesPerCall: 1, countersPerDelivery: 1, open: production, batch: () => [oneBucket] },
  { label: '(b) unkeyed + 1 of 1,000 keys, 2 limits each', deliveriesPerCall: 1, countersPerDelivery: 4, open: production, batch: () => [anyCustomer()] },
  { label: '(c) 1 bucket, 1 limit', deliveriesPerCall: BATCH, countersPerDelivery: 1, open: production, batch: () => copies(BATCH, () => oneBucket) },
  { label: '(d) unkeyed + 1 of 1,000 keys, 2 limits each', deliveriesPerCall: BATCH, countersPerDelivery: 4, open: production, batch: () => copies(BATCH, anyCustomer) },
  { label: '(e) 1 bucket, a rate', deliveriesPerCall: 1, countersPerDelivery: 1, open: production, batch: () => [[{ throttle: rateOnly }]] },
  { label: '(e) 1 bucket, a rate', deliveriesPerCall: BATCH, countersPerDelivery: 1, open: production, batch: () => copies(BATCH, () => [{ throttle: rateOnly }]) },
  { label: '(f) 1 bucket, a rate and 1 limit', deliveriesPerCall: BATCH, countersPerDelivery: 2, open: production, batch: () => copies(BATCH, () => [{ throttle: rateAndWindow }]) },
  { label: 'refused: full bucket, burst-filled', deliveriesPerCall: 1, countersPerDelivery: 1, open: burstFilled, batch: () => [[{ throttle: fullBurst }]] },
  { label: 'refused: full bucket, burst-filled', deliveriesPerCall: BATCH, countersPerDelivery: 1, open: burstFilled, batch: () => copies(BATCH, () => [{ throttle: fullBurst }]) },
  { label: 'refused: full bucket, spread over 1 h', deliveriesPerCall: 1, countersPerDelivery: 1, open: spreadFilled, batch: () => [[{ throttle: fullSpread }]] },
  { label: 'refused: full bucket, spread over 1 h', deliveriesPerCall: BATCH, countersPerDelivery: 1, open: spreadFilled, batch: () => copies(BATCH, () => [{ throttle: fullSpread }]) },
];

async function measure(context: BenchmarkContext, testCase: Case): Promise<Row[]> {
  const grantor = await testCase.open(context);
  const rows: Row[] = [];
  try {
    for (const inFlight of IN_FLIGHT) {
      let granted = 0;
      let asked = 0;
      const call = async (): Promise<void> => {
        const results = await grantor.grant(testCase.batch());
        asked += results.length;
        granted += results.filter((result) => result.granted).length;
      };
      await runFor(WARM_UP_MS, inFlight, call);
      granted = 0;
      asked = 0;
      const stats = await runFor(context.durationMs, inFlight, call);
      context.log(`  ${testCase.label} x${testCase.deliveriesPerCall}, ${inFlight} in flight: ${Math.round(stats.callsPerSecond)} calls/s`);
      rows.push({
        case: testCase.label,
        inFlight,
        deliveriesPerCall: testCase.deliveriesPerCall,
        countersPerDelivery: testCase.countersPerDelivery,
        callsPerSecond: Math.round(stats.callsPerSecond),
        deliveriesPerSecond: Math.round(stats.callsPerSecond * testCase.deliveriesPerCall),
        grantedPercent: asked === 0 ? null : Math.round((1000 * granted) / asked) / 10,
        p50Ms: stats.p50Ms,
        p99Ms: stats.p99Ms,
      });
    }
  } finally {
    await grantor.close();
  }
  return rows;
}

export const grantThroughput: Benchmark = {
  name: 'grantThroughput',
  description: 'deliveries decided per second by the grant script through Grantor.grant(), on one connection',
  async run(context) {
    const rows: Row[] = [];
    for (const testCase of CASES) rows.push(...(await measure(context, testCase)));
    const notes = [
      `${context.durationMs} ms per row after a ${WARM_UP_MS} ms warm-up; "in flight" calls share one connection (pipelined).`,
      'Rows (a)-(d) use limits that never bind (10,000,000/1s, and 100,000,000/1m where there are two), so every delivery is granted;',
      '  (e) and (f) a rate that never binds (10,000,000/1s), alone and beside a window limit: compare them with (a) and (c).',
      'Refused rows: a bucket already at its limit (100/1h filled at once: few hash fields; 100,000/1h spread over the hour on a',
      '  shifted test clock: ~220 release-index fields). A refusal reads the whole counter (HGETALL) to compute retryAt.',
      'Latencies include the client side (key building, token ids). Times are noisy on small machines: compare rows, not runs.',
    ];
    return {
      title: 'Grant throughput: Grantor.grant()',
      columns: [
        { key: 'case', label: 'case' },
        { key: 'deliveriesPerCall', label: 'deliveries/call' },
        { key: 'countersPerDelivery', label: 'counters/delivery' },
        { key: 'inFlight', label: 'in flight' },
        { key: 'callsPerSecond', label: 'calls/s' },
        { key: 'deliveriesPerSecond', label: 'deliveries/s' },
        { key: 'grantedPercent', label: 'granted %', digits: 1 },
        { key: 'p50Ms', label: 'p50 ms', digits: 3 },
        { key: 'p99Ms', label: 'p99 ms', digits: 3 },
      ],
      rows,
      notes,
    };
  },
};

import { BenchCluster } from './support/benchCluster';
import { ClientCalls } from './support/clientCalls';
import { loadNote } from './support/loadNote';
import { round } from './support/summary';
import { heldPart } from './cluster/heldPart';
import { sustainedPart, TokenCount } from './cluster/sustainedPart';
import { CONCURRENCY, TARGET_RATIO, throughputPart } from './cluster/throughputPart';
import type { Benchmark, Row } from './types';

/** At the default BENCH_DURATION_MS (3000): sizes that keep the whole benchmark under about 3 minutes here. */
const DEFAULT_DURATION_MS = 3000;
const JOBS_PER_QUEUE = 5000;
const RUNS = 5;
const FLOW_JOBS_PER_QUEUE = 3000;

function tokenRow(label: string, count: TokenCount): Row {
  // Tokens that expire in a pool are returned to the grantor too (lua/includes/leasedRoom.lua): returned holds them.
  const unaccounted = count.granted - count.delivered - count.returned;
  return {
    part: '3 tokens', measure: 'expired per 1,000 grants', case: label,
    value: count.granted > 0 ? round((1000 * count.expired) / count.granted, 2) : null, unit: '‰', pass: null,
    detail: `granted ${count.granted}, delivered ${count.delivered}, expired ${count.expired}, returned ${Math.round(count.returned)}, unaccounted ${Math.round(unaccounted)}`,
    granted: count.granted, delivered: count.delivered, expired: count.expired, returned: round(count.returned, 1),
  };
}

function sumTokens(counts: readonly TokenCount[]): TokenCount {
  return counts.reduce((s, c) => ({ granted: s.granted + c.granted, expired: s.expired + c.expired, returned: s.returned + c.returned, delivered: s.delivered + c.delivered }),
    { granted: 0, expired: 0, returned: 0, delivered: 0 });
}

export const clusterThroughput: Benchmark = {
  name: 'clusterThroughput',
  description: 'Redis Cluster (3 masters, 3 replicas, started here): plain bullmq vs exact vs leased ThrottledWorker jobs/s, leased sustained rate, tokens expired, commands per delivery with 100,000 held',
  async run(context) {
    const load = loadNote();
    const scale = context.durationMs / DEFAULT_DURATION_MS;
    const perQueue = Math.max(500, Math.round(JOBS_PER_QUEUE * scale));
    const flowPerQueue = Math.max(300, Math.round(FLOW_JOBS_PER_QUEUE * scale));
    context.log('  starting a 3-master, 3-replica Redis Cluster');
    const bench = await BenchCluster.start();
    const calls = new ClientCalls().install();
    try {
      context.log(`  masters on ports ${bench.masters.map((m) => m.port).join(', ')}`);
      context.log('part 1: throughput');
      const throughput = await throughputPart(bench, calls, perQueue, RUNS, context.log);
      context.log('part 2: sustained rate under a backlog, leased');
      const sustained = await sustainedPart(bench, calls, 2.5 * context.durationMs, context.log);
      context.log('part 4: commands per delivery with and without held jobs, leased');
      const held = await heldPart(bench, calls, flowPerQueue, context.log);
      const tokenRows = [
        tokenRow(`never binding (part 1, ${throughput.leaseTokens.length} leased runs)`, sumTokens(throughput.leaseTokens)),
        ...sustained.tokens.map((t) => tokenRow(t.label, t.count)),
      ];
      return {
        title: `Redis Cluster throughput (3 masters + 3 replicas on this machine): bullmq vs ThrottledWorker exact vs leased; leased: sustained rate, tokens expired, commands per delivery`,
        columns: [
          { key: 'part', label: 'part' },
          { key: 'measure', label: 'measure' },
          { key: 'case', label: 'case' },
          { key: 'value', label: 'value', digits: 3 },
          { key: 'unit', label: 'unit' },
          { key: 'pass', label: 'pass' },
          { key: 'detail', label: 'detail' },
        ],
        rows: [...throughput.rows, ...sustained.rows, ...tokenRows, ...held.rows],
        notes: [
          `Leased / bullmq over the same 3 queues on 3 masters: ${throughput.leaseRatio} (target ≥ ${TARGET_RATIO}): ${throughput.leaseRatio >= TARGET_RATIO ? 'pass' : 'FAIL'}; `
            + `exact / bullmq in one slot: ${throughput.exactRatio}.`,
          ...throughput.notes,
          ...sustained.notes,
          'Part 3: granted = tokens leaseTokens granted, added up from its replies in this process (wrappers around ScriptRunner.run and .pipeline; nothing in src/ changes);',
          "  expired = throttleStats(name).tokensExpired (ThrottleAdmin on a Cluster client, read before the workers close); delivered = deliveredTotal;",
          '  returned = what returnLeasedTokens said stopped counting (the pools\' leftovers are withdrawn and returned as the workers close);',
          '  unaccounted = granted - delivered - returned: tokens still in the pools when the stats were read and not returned at close',
          '  (they expire unseen: no delivery call looks at them again), or returned once their count had lapsed. A grant is one delivery\'s token',
          '  of that throttle. Tokens found expired in a pool are returned to the grantor as well: returned counts them (expired says how many).',
          ...held.notes,
          `Sizes scale with BENCH_DURATION_MS (default ${DEFAULT_DURATION_MS}; now ${context.durationMs}): ${perQueue} jobs per queue per run in part 1, flows of ${flowPerQueue} per queue`,
          `  in part 4 (the 100,000 held jobs do not scale). Concurrency ${CONCURRENCY} per worker throughout. Every process (node, 6 redis-servers) shares this machine's cores.`,
          `The run's cluster is the benchmark's own: its nodes are emptied (FLUSHALL) between cases and stopped at the end. ${load} at start.`,
        ],
      };
    } finally {
      calls.remove();
      await bench.stop();
    }
  },
};

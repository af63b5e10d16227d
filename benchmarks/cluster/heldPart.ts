import { setTimeout as sleep } from 'node:timers/promises';
import { Throttle } from '../../src/declarations/Throttle';
import { Key } from '../../src/declarations/Key';
import { Missing } from '../../src/declarations/Missing';
import { BenchCluster, spreadLayout } from '../support/benchCluster';
import { ClientCalls } from '../support/clientCalls';
import { clusterCounters, clusterCountersDelta, ClusterCounters, topCommands, workloadCommands } from '../support/clusterCounters';
import { round } from '../support/summary';
import type { Row } from '../types';
import { getThrottledCount } from '../../src/worker/getThrottledCount';
import { ClusterRig } from './clusterRig';
import { waitWithProgress } from './progress';
import { CONCURRENCY } from './throughputPart';

export const HELD_JOBS = 100_000;
const IDLE_MS = 2000;
/** Buckets of the 'hog' throttle per queue: each lets one job through (1 per hour), the rest are held. */
const HOG_KEYS_PER_QUEUE = 4;
/** 'all' never binds; 'hog' (1 per hour per data.hog) holds every job that has data.hog but the first of each key. */
const THROTTLES = [
  Throttle.named('all').limit(10_000_000, '1s'),
  Throttle.named('hog').key([Key.data('hog')]).whenKeyMissing(Missing.Unthrottled).limit(1, '1h'),
];

interface Measured {
  deliveries: number;
  commandsPerDelivery: number;
  evalshaPerDelivery: number;
  redisCpuUsPerDelivery: number;
  sentPerDelivery: number;
  deliveryCallsPerDelivery: number;
  leaseCallsPerDelivery: number;
  heldBefore: number;
  heldAfter: number;
  /** Of the hog buckets' one allowed job each, how many were delivered. */
  hogDelivered: number;
  /** While nothing could be delivered: delivery calls and master commands per second, master CPU (cores). */
  idle: { deliveryCallsPerSecond: number; commandsPerSecond: number; cpuShare: number };
  top: string;
}

interface AddCost { commands: number; evalsha: number; cpuUs: number; sent: number }

export interface HeldOutcome {
  rows: Row[];
  notes: string[];
}

/** Commands the masters run per job added with addBulk (no worker): subtracted from the flows, which add their jobs while measured. */
async function addCost(bench: BenchCluster, calls: ClientCalls, perQueue: number): Promise<AddCost> {
  const rig = new ClusterRig(bench, spreadLayout(bench, 'bench-cl-addcost', 'q'));
  try {
    calls.reset();
    const before = await clusterCounters(bench.masterConnections);
    await rig.addBacklog(perQueue, (q, i) => ({ q, i }));
    const delta = clusterCountersDelta(before, await clusterCounters(bench.masterConnections)).total;
    const jobs = perQueue * 3;
    return { commands: workloadCommands(delta) / jobs, evalsha: delta.evalshaCalls / jobs, cpuUs: delta.serverCpuUsec / jobs, sent: calls.sentTotal() / jobs };
  } finally {
    await rig.close();
  }
}

/**
 * One flow: with the workers running (and, when `held`, 100,000 jobs held by 'hog'), adds `perQueue`
 * unthrottled-by-hog jobs to each queue and counts what the masters executed until all were delivered.
 */
async function flow(bench: BenchCluster, calls: ClientCalls, perQueue: number, held: boolean, add: AddCost, log: (m: string) => void): Promise<Measured> {
  const rig = new ClusterRig(bench, spreadLayout(bench, `bench-cl-held-${held ? 'yes' : 'no'}`, 'q'));
  try {
    const heldPerQueue = [0, 1, 2].map((q) => Math.floor(HELD_JOBS / 3) + (q < HELD_JOBS % 3 ? 1 : 0));
    if (held) {
      const t0 = Date.now();
      await rig.addBacklog(heldPerQueue.map((n) => n + HOG_KEYS_PER_QUEUE), (q, i) => ({ hog: `h${q}-${i % HOG_KEYS_PER_QUEUE}` }));
      log(`  added ${HELD_JOBS + 3 * HOG_KEYS_PER_QUEUE} hog jobs in ${Date.now() - t0} ms`);
    }
    let hogDone = 0;
    let flowDone = 0;
    rig.startWorkers({ kind: 'throttled', concurrency: CONCURRENCY, throttles: THROTTLES }, async (job) => {
      if ((job.data as { hog?: string }).hog !== undefined) hogDone++;
      else flowDone++;
    });
    await Promise.all(rig.workers.map((w) => w.waitUntilReady()));
    // Jobs the throttle layer holds (classified, in their classes), over the queues.
    const heldNow = async () => (await Promise.all(rig.queues.map((q) => getThrottledCount(q)))).reduce((s, c) => s + c.held, 0);
    const hogJobs = held ? HELD_JOBS + 3 * HOG_KEYS_PER_QUEUE : 0;
    if (held) {
      const t0 = Date.now();
      const deadline = Date.now() + 120_000;
      // Every hog job classified: held, or delivered (one per bucket may go).
      while ((await heldNow()) + hogDone < hogJobs) {
        if (Date.now() > deadline) throw new Error(`held jobs: ${await heldNow()} held and ${hogDone} delivered of ${hogJobs} after 120 s`);
        await sleep(200);
      }
      log(`  ${await heldNow()} jobs held and ${hogDone} of ${3 * HOG_KEYS_PER_QUEUE} hog buckets' one job delivered, ${Date.now() - t0} ms after the workers were ready`);
    }
    await sleep(1000); // let start-up work (classification, first leases for the hog classes) settle
    rig.assertModes('leased delivery', 'held-jobs flow');
    // Idle: nothing deliverable (held jobs wait an hour); what do the workers ask of Redis meanwhile?
    calls.reset();
    const idleBefore = await clusterCounters(bench.masterConnections);
    const idleStart = Date.now();
    await sleep(IDLE_MS);
    const idleDelta = clusterCountersDelta(idleBefore, await clusterCounters(bench.masterConnections)).total;
    const idleSeconds = (Date.now() - idleStart) / 1000;
    const idle = { deliveryCallsPerSecond: calls.takes.calls / idleSeconds, commandsPerSecond: workloadCommands(idleDelta) / idleSeconds, cpuShare: idleDelta.serverCpuUsec / 1e6 / idleSeconds };
    const heldBefore = await heldNow();
    if (flowDone > 0) throw new Error(`${flowDone} jobs without data.hog were delivered before the flow`);
    calls.reset();
    const before: ClusterCounters = await clusterCounters(bench.masterConnections);
    const added = perQueue * 3;
    await rig.addBacklog(perQueue, (q, i) => ({ q, i }));
    await waitWithProgress(() => flowDone, added, () => rig.errors.length > 0, 120_000, `flow ${held ? 'with' : 'without'} held jobs`);
    const delta = clusterCountersDelta(before, await clusterCounters(bench.masterConnections)).total;
    rig.assertNoErrors('held-jobs flow');
    const heldAfter = await heldNow();
    const per = (n: number) => n / flowDone;
    return {
      deliveries: flowDone,
      commandsPerDelivery: per(workloadCommands(delta) - add.commands * added),
      evalshaPerDelivery: per(delta.evalshaCalls - add.evalsha * added),
      redisCpuUsPerDelivery: per(delta.serverCpuUsec - add.cpuUs * added),
      sentPerDelivery: per(calls.sentTotal() - add.sent * added),
      deliveryCallsPerDelivery: per(calls.takes.calls),
      leaseCallsPerDelivery: per(calls.scripts.get('leaseTokens') ?? 0),
      heldBefore,
      heldAfter,
      hogDelivered: hogDone,
      idle,
      top: topCommands(delta, flowDone),
    };
  } finally {
    await rig.close();
  }
}

/** Part 4: Redis commands per delivery in leased delivery, without and with 100,000 jobs held. */
export async function heldPart(bench: BenchCluster, calls: ClientCalls, perQueue: number, log: (m: string) => void): Promise<HeldOutcome> {
  const add = await addCost(bench, calls, perQueue);
  log(`  adding a job costs ${add.commands.toFixed(2)} commands, ${add.evalsha.toFixed(3)} EVALSHA, ${add.cpuUs.toFixed(1)} µs of master CPU, ${add.sent.toFixed(3)} commands sent by node`);
  const without = await flow(bench, calls, perQueue, false, add, log);
  const withHeld = await flow(bench, calls, perQueue, true, add, log);
  const rows: Row[] = [];
  for (const [label, m] of [['no jobs held', without], [`${HELD_JOBS.toLocaleString('en-US')} jobs held`, withHeld]] as const) {
    log(`  ${label}: ${m.commandsPerDelivery.toFixed(2)} commands, ${m.evalshaPerDelivery.toFixed(3)} EVALSHA, ${m.redisCpuUsPerDelivery.toFixed(1)} µs master CPU, ${m.sentPerDelivery.toFixed(3)} sent by node per delivery; held ${m.heldBefore} → ${m.heldAfter}`);
    log(`    per delivery (adding included): ${m.top}`);
    rows.push({
      part: '4 commands', measure: 'Redis commands / delivery', case: `leased, ${label}`, value: round(m.commandsPerDelivery, 2), unit: 'commands', pass: null,
      detail: `EVALSHA ${m.evalshaPerDelivery.toFixed(3)}, master CPU ${m.redisCpuUsPerDelivery.toFixed(1)} µs, node sent ${m.sentPerDelivery.toFixed(3)}, delivery calls ${m.deliveryCallsPerDelivery.toFixed(3)}, lease calls ${m.leaseCallsPerDelivery.toFixed(4)} per delivery; held ${m.heldBefore} → ${m.heldAfter}` + (m === withHeld ? `; hog buckets' one job delivered: ${m.hogDelivered} of ${3 * HOG_KEYS_PER_QUEUE}` : ''),
      evalshaPerDelivery: round(m.evalshaPerDelivery, 3), redisCpuUsPerDelivery: round(m.redisCpuUsPerDelivery, 1), sentPerDelivery: round(m.sentPerDelivery, 3), deliveries: m.deliveries, heldBefore: m.heldBefore, heldAfter: m.heldAfter,
    });
  }
  for (const [label, m] of [['no jobs held', without], [`${HELD_JOBS.toLocaleString('en-US')} jobs held`, withHeld]] as const) {
    rows.push({
      part: '4 commands', measure: 'idle delivery calls / s', case: `leased, ${label}, nothing to deliver`, value: round(m.idle.deliveryCallsPerSecond, 1), unit: 'calls/s', pass: null,
      detail: `over ${IDLE_MS / 1000} s before the flow: ${Math.round(m.idle.commandsPerSecond)} master commands/s, ${(100 * m.idle.cpuShare).toFixed(1)}% of a core (masters)`,
    });
  }
  const ratio = round(withHeld.commandsPerDelivery / without.commandsPerDelivery, 3);
  // Unchanged: within 5% (idle background commands, heartbeats and lease retries, scale with time, not deliveries).
  rows.push({ part: '4 commands', measure: 'held / none', case: 'commands per delivery', value: ratio, unit: '×', pass: Math.abs(ratio - 1) <= 0.05, detail: `master CPU per delivery ${round(withHeld.redisCpuUsPerDelivery / without.redisCpuUsPerDelivery, 2)}×; pass: within 5%` });
  return {
    rows,
    notes: [
      `Part 4: leased, three queues on three masters, throttles 'all' (never binds) and 'hog' (1 per 1h keyed on data.hog, jobs without it unthrottled by it).`,
      `  Held: ${HELD_JOBS.toLocaleString('en-US')} jobs with data.hog over ${3 * HOG_KEYS_PER_QUEUE} hog buckets (one job each delivered, the rest held), classified and counted held`,
      `  (getThrottledCount's held, over the queues) before measuring. Then ${perQueue.toLocaleString('en-US')} jobs per queue without data.hog are added while measured, until all are delivered.`,
      '  Commands: INFO commandstats calls summed over the 3 masters (client commands and the commands scripts run; EVALSHA, INFO, CLUSTER, PING',
      '  left out), minus what adding the same jobs costs (measured alone first), per delivery. Idle work (heartbeats, blocking reads) is included.',
    ],
  };
}

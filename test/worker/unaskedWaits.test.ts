import type { TakeReply } from '../../src/delivery/takeNextJobs';
import type { GateFailures } from '../../src/worker/gateFailures';
import { DeliveryRequest, UNASKED_WAIT_MS } from '../../src/worker/slots/deliveryTuning';
import { SlotRequests, SlotServer } from '../../src/worker/slots/slotRequests';

/**
 * At a binding limit each completion's next fetch made a delivery call that found the room just taken, then waited
 * for it all the same; bullmq's main loop did the same (src/worker/slots/slotRequests.ts, roomReturnsAt). What the
 * slots do is worked out here, in the process, so the delivery calls are stood in for: what each call answers is
 * scripted, and the test counts the calls.
 */
function reply(jobs: number, roomInMs: number): TakeReply {
  const nowUs = 1_000_000_000;
  return {
    nowUs, nowMs: nowUs / 1000, nextWakeUs: roomInMs > 0 ? nowUs + roomInMs * 1000 : 0, nextDelayedMs: 0, unclassified: 0,
    stale: 0, dropped: 0, gen: 'g', more: false, rateLimitMs: 0, refused: new Set(),
    jobs: Array.from({ length: jobs }, (_, i) => ({ id: `j${i}`, fields: ['name', 'n', 'data', '{}'] })),
  };
}

function slots(answers: TakeReply[], roomReturnsOnlyWithTime = true) {
  const calls: string[][] = [];
  const drained: number[] = [];
  const server: SlotServer = {
    flushCompletions: () => undefined,
    take: async (tokens) => {
      calls.push(tokens);
      return answers.shift() ?? reply(0, 0);
    },
    answered: () => undefined,
    classifyBatch: async () => 0,
  };
  const failures = { deliverySucceeded: () => undefined, deliveryFailed: () => 0, report: () => undefined } as unknown as GateFailures;
  const requests = new SlotRequests({
    started: Promise.resolve(server), closed: () => false, mayWait: () => true, concurrency: () => 4, maxBatch: () => 64,
    emitDrained: () => { drained.push(calls.length); }, wakeBullmq: async () => undefined, failures, roomReturnsOnlyWithTime: () => roomReturnsOnlyWithTime,
  });
  const ask = (token: string, kind: DeliveryRequest['kind'], mainLoop = false) => requests.submit({ token, name: 'n', kind, waits: 0, mainLoop });
  return { requests, calls, ask, drained };
}

const hasJob = (answer: unknown[]) => Boolean(answer[0]);
// The clock is jest's (performance.now, Date, timers): a loaded machine's pauses cannot move room's moment past a fetch.
const tick = (ms = 0) => jest.advanceTimersByTimeAsync(ms);

describe('unasked waits: fetches wait for room a call already named', () => {
  beforeEach(() => { jest.useFakeTimers(); });
  afterEach(() => { jest.useRealTimers(); });

  it("a slot's next fetch waits with the parked ones, without a call, and is served when room returns", async () => {
    // A call that leaves its slot waiting: room returns in 10 ms.
    const { requests, calls, ask } = slots([reply(0, 10), reply(2, 0)]);
    const first = ask('w:1', 'next');
    await tick();
    expect(calls).toHaveLength(1);
    // Within UNASKED_WAIT_MS of room: no call, it waits for the same moment.
    const second = ask('w:2', 'next');
    await tick(2);
    expect(calls).toHaveLength(1);
    await tick(10);
    const answers = await Promise.all([first, second]);
    // One call when room returned, for both.
    expect(calls).toEqual([['w:1'], ['w:1', 'w:2']]);
    expect(answers.map(hasJob)).toEqual([true, true]);
    requests.stop();
  });

  it("bullmq's main loop is told when room returns, without a call, and `drained` owed since a pass comes with it", async () => {
    const { requests, calls, ask, drained } = slots([reply(1, 0), reply(0, 10)]);
    // The main loop's fetch brings a job; its next is a pass (no call, no `drained` yet: bullmq holds jobs to start).
    expect(hasJob(await ask('w:0', 'fetch', true))).toBe(true);
    expect(hasJob(await ask('w:0', 'fetch', true))).toBe(false);
    expect(drained).toEqual([]);
    void ask('w:1', 'next');
    await tick();
    expect(calls).toHaveLength(2);
    const before = Date.now();
    const answer = await ask('w:2', 'fetch', true);
    expect(calls).toHaveLength(2);
    expect(hasJob(answer)).toBe(false);
    // As after a call that found nothing: the `drained` the pass held back.
    expect(drained).toEqual([2]);
    // raw2NextJobData: [job, id, rateLimitDelay, delayUntil]; delayUntil is when room returns, on this clock.
    const delayUntil = Number(answer[3]);
    expect(delayUntil).toBeGreaterThan(before);
    expect(delayUntil).toBeLessThanOrEqual(before + 11);
    requests.stop();
  });

  it('asks Redis when room may return unseen (a concurrency), or later than UNASKED_WAIT_MS', async () => {
    // Two next fetches after a call that left the first waiting: how many calls they made.
    const callsForTwo = async (roomInMs: number, roomReturnsOnlyWithTime: boolean) => {
      const { requests, calls, ask } = slots([reply(0, roomInMs)], roomReturnsOnlyWithTime);
      for (const token of ['w:1', 'w:2']) {
        void ask(token, 'next');
        await tick();
      }
      requests.stop();
      return calls.length;
    };
    expect(await callsForTwo(10, false)).toBe(2);
    expect(await callsForTwo(UNASKED_WAIT_MS + 30, true)).toBe(2);
    expect(await callsForTwo(10, true)).toBe(1);
  });

  it('a call that finds room ends what the last one said: the next fetch asks again', async () => {
    const { requests, calls, ask } = slots([reply(0, 10), reply(1, 0), reply(1, 0)]);
    const first = ask('w:1', 'next');
    await tick();
    // Woken early (a job was found, tokens came): they look again at once, and find room.
    requests.wakeParked();
    expect(hasJob(await first)).toBe(true);
    const second = await ask('w:2', 'next');
    expect(hasJob(second)).toBe(true);
    expect(calls).toHaveLength(3);
    requests.stop();
  });
});

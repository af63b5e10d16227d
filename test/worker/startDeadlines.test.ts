import { latestStartMs, StartDeadlines } from '../../src/worker/lateStarts/startDeadlines';

/**
 * The margin a start keeps before its deadline (issue 26): a pause between the check and the processor's first line
 * must not carry a start past the deadline its delivery was counted with, so short deadlines keep a few ms, not a
 * tenth of themselves (a tenth of 15 ms let a CI run start 4 jobs in a window of 3).
 */
describe('start deadlines', () => {
  it('keeps a tenth of a long deadline, at least 4 ms of a short one, never more than half', () => {
    expect(latestStartMs(100)).toBeCloseTo(90);
    expect(latestStartMs(250)).toBeCloseTo(225);
    expect(latestStartMs(15)).toBeCloseTo(11);
    expect(latestStartMs(6)).toBeCloseTo(3);
  });

  it('puts back a job checked past the margin, starts one checked within it', () => {
    const deadlines = new StartDeadlines(15);
    deadlines.delivered(['a', 'b'], 1_000, 15, 0, ['x=y$1@100', 'x=y$1@100'], 1_001);
    expect(deadlines.lateStart('a', 1_000 + 10.9)).toBeUndefined();
    expect(deadlines.lateStart('b', 1_000 + 11.5)).toMatchObject({ jobId: 'b', deadlineMs: 15 });
    expect(deadlines.stats()).toMatchObject({ started: 1, putBack: 1 });
  });

  it('chooses an h that lets the usual start through with the margin to spare', () => {
    const deadlines = new StartDeadlines(undefined, () => 100);
    // Starts 7.2 ms after their delivery: 1.5 times that, 11 ms, would start them by 7 ms only.
    const startAll = (from: number) => {
      for (let i = from; i < from + 100; i++) {
        deadlines.delivered([`j${i}`], i * 1_000, deadlines.currentMs(), 0, ['x=y$1@100'], i * 1_000);
        deadlines.lateStart(`j${i}`, i * 1_000 + 7.2);
      }
    };
    startAll(0);
    const h = deadlines.currentMs();
    expect(latestStartMs(h)).toBeGreaterThanOrEqual(7.2);
    const before = deadlines.stats().putBack;
    startAll(100);
    expect(deadlines.stats().putBack).toBe(before);
  });

  it('rises past its usual ceiling while most starts come late even so, and comes back once they fit it', () => {
    const deadlines = new StartDeadlines(undefined, () => 33, () => 250);
    let at = 0;
    const startAll = (ageMs: number, count: number) => {
      for (let i = 0; i < count; i++, at += 1_000) {
        deadlines.delivered([`j${at}`], at, deadlines.currentMs(), 0, ['x=y$1@1000'], at);
        deadlines.lateStart(`j${at}`, at + ageMs);
      }
    };
    // Every start 60 ms after its delivery: a usual ceiling of 33 ms would put back every one, for ever.
    startAll(60, 300);
    expect(deadlines.currentMs()).toBeGreaterThan(60);
    const putBack = deadlines.stats().putBack;
    startAll(60, 100);
    expect(deadlines.stats().putBack).toBe(putBack);
    // Starts quick again: back under the usual ceiling.
    startAll(5, 1_000);
    expect(deadlines.currentMs()).toBeLessThanOrEqual(33);
  });

  // Redis's clock 5 s behind this process's: a script that ran at local t read t - 5,000 (ms).
  const redisAt = (local: number, offset = 5_000) => (local - offset) * 1_000;

  it("counts a delivery's age from when its script ran, as far as the clocks tell, not from when its call was sent", () => {
    const deadlines = new StartDeadlines(33);
    // A quick call tells the clocks' offset within a ms.
    deadlines.delivered([], 100, 33, redisAt(100.5), [], 101);
    // A call that waited 39 ms for Redis before its script ran, at 239.
    deadlines.delivered(['a'], 200, 33, redisAt(239), ['x=y$1@1000'], 240);
    // Started 11 ms after it was counted (50 after the call was sent): on time, its age taken as under 12 ms.
    expect(deadlines.lateStart('a', 250)).toBeUndefined();
  });

  it("never counts from later than the script ran: a Redis clock that steps forward restarts what the clocks told", () => {
    const deadlines = new StartDeadlines(33);
    deadlines.delivered([], 100, 33, redisAt(100.5), [], 101);
    // Redis's clock steps 1 s forward: the script that ran at 300.5 reads 300.5 - 4,000.
    deadlines.delivered(['b'], 300, 33, redisAt(300.5, 4_000), ['x=y$1@1000'], 301);
    // 40 ms after its delivery: late (taken from the old offset, it would seem counted a second after it was).
    expect(deadlines.lateStart('b', 340)).toMatchObject({ jobId: 'b' });
  });
});

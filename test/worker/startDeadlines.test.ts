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
});

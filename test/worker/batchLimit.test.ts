import { BatchLimit } from '../../src/worker/lateStarts/batchLimit';

describe('BatchLimit: fewer jobs per delivery call while starts come late', () => {
  it('halves once per call on a late start, and grows back one per batch of starts in time, to no limit', () => {
    const limit = new BatchLimit();
    expect(limit.limit).toBe(Infinity);
    const sentAt = performance.now() - 5;
    limit.late(sentAt, 50);
    expect(limit.limit).toBe(25);
    // More late jobs of the same call (sent before the halving) say nothing new.
    limit.late(sentAt, 50);
    expect(limit.limit).toBe(25);
    // A later call's late job halves again.
    limit.late(performance.now() + 1, 25);
    expect(limit.limit).toBe(12);
    // 12 starts in time: 13.
    for (let i = 0; i < 12; i++) limit.onTime();
    expect(limit.limit).toBe(13);
    // Grown to 64: no limit.
    for (let i = 0; i < 5_000 && limit.limit !== Infinity; i++) limit.onTime();
    expect(limit.limit).toBe(Infinity);
  });

  it('never goes below one job a call', () => {
    const limit = new BatchLimit();
    let at = performance.now();
    for (let i = 0; i < 10; i++) limit.late((at += 1_000), 1);
    expect(limit.limit).toBe(1);
  });
});

import { PendingRequest, RequestBatcher } from '../../src/redis/requestBatcher';

describe('RequestBatcher', () => {
  it('serves what arrives during a call as the next batch, and overlaps a second call only for a big enough batch', async () => {
    const calls: number[][] = [];
    const finish: (() => void)[] = [];
    const batcher = new RequestBatcher<number, number>((batch: PendingRequest<number, number>[]) => {
      calls.push(batch.map((p) => p.request));
      return new Promise<void>((resolve) => finish.push(() => { batch.forEach((p) => p.resolve(p.request * 10)); resolve(); }));
    }, 64, 2, 4);
    const first = batcher.submit(1);
    const waiting = [2, 3, 4].map((n) => batcher.submit(n));
    expect(calls).toEqual([[1]]);
    const more = batcher.submit(5);
    expect(calls).toEqual([[1], [2, 3, 4, 5]]);
    const later = [6, 7].map((n) => batcher.submit(n));
    expect(calls).toHaveLength(2);
    finish[0]();
    expect(await first).toBe(10);
    await new Promise((resolve) => setImmediate(resolve));
    // One call is still in flight, and two requests are too few to overlap it.
    expect(calls).toHaveLength(2);
    finish[1]();
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual([[1], [2, 3, 4, 5], [6, 7]]);
    finish[2]();
    expect(await Promise.all([...waiting, more, ...later])).toEqual([20, 30, 40, 50, 60, 70]);
  });
});

describe('RequestBatcher.resubmit', () => {
  it('serves requests given back ahead of newer ones, in one batch with them', async () => {
    const calls: number[][] = [];
    let finishFirst!: () => void;
    const batcher: RequestBatcher<number, number> = new RequestBatcher<number, number>((batch) => {
      calls.push(batch.map((p) => p.request));
      if (calls.length > 1) {
        batch.forEach((p) => p.resolve(p.request));
        return Promise.resolve();
      }
      // The first call gives its request back, as a call does whose request waits for room.
      return new Promise<void>((resolve) => { finishFirst = () => { batcher.resubmit(batch); resolve(); }; });
    }, 64, 1);
    const first = batcher.submit(1);
    const newer = batcher.submit(2);
    expect(calls).toEqual([[1]]);
    finishFirst();
    expect(await Promise.all([first, newer])).toEqual([1, 2]);
    expect(calls).toEqual([[1], [1, 2]]);
  });
});

describe('RequestBatcher.flush', () => {
  it('serves every waiting request at once, beyond the calls in flight, in batches of at most maxBatch', async () => {
    const calls: number[][] = [];
    const finish: (() => void)[] = [];
    const batcher = new RequestBatcher<number, number>((batch) => {
      calls.push(batch.map((p) => p.request));
      return new Promise<void>((resolve) => finish.push(() => { batch.forEach((p) => p.resolve(p.request)); resolve(); }));
    }, 2, 1);
    const all = [1, 2, 3, 4, 5, 6].map((n) => batcher.submit(n));
    // One call in flight at most: the others wait for it.
    expect(calls).toEqual([[1]]);
    batcher.flush();
    expect(calls).toEqual([[1], [2, 3], [4, 5], [6]]);
    batcher.flush();
    expect(calls).toHaveLength(4);
    finish.forEach((f) => f());
    expect(await Promise.all(all)).toEqual([1, 2, 3, 4, 5, 6]);
  });
});

describe('RequestBatcher when serve throws', () => {
  it('rejects the requests still waiting, keeps the ones already answered, and serves the next batch', async () => {
    const calls: number[][] = [];
    const batcher = new RequestBatcher<number, number>(async (batch) => {
      calls.push(batch.map((p) => p.request));
      if (calls.length === 2) {
        batch[0].resolve(2);
        throw new Error('a bug in serve');
      }
      batch.forEach((p) => p.resolve(p.request));
    }, 2, 1);
    const first = batcher.submit(1);
    const [answered, rejected] = [batcher.submit(2), batcher.submit(3)];
    const next = batcher.submit(4);
    expect(await first).toBe(1);
    expect(await answered).toBe(2);
    await expect(rejected).rejects.toThrow('a bug in serve');
    expect(await next).toBe(4);
    expect(calls).toEqual([[1], [2, 3], [4]]);
  });
});
